// swift-tools-version:6.0
// actiontrain: train and evaluate action classifiers on body-pose windows.
// Dependency direction (see docs/architecture.md):
//   PoseCore, CZlib <- Datasets  (CZlib: the system zlib, for .npz inflate)
//   PoseCore, CBLAS, CKernels <- ActionRuntime  (the importable inference runtime)
//   ActionRuntime, Datasets <- ActionTrain
//   ActionRuntime, PoseCore <- ModelExport  (no processes: the onnxruntime check is the CLI's)
//   Eval depends on PoseCore only for SeededGenerator (labels, predictions, probabilities only)
//   ActionTrain, ActionRuntime, Datasets, Eval, PoseCore <- Pipelines  (fit and evaluation runs)
//   all of the above and ModelExport <- ActionTrainKit  (re-exports them: one import; docs/library.md)
//   actiontrain (CLI) depends on everything; only it parses flags, prints and exits.
//   ActionTrain, CMPI <- MPICollective  (only with ACTIONTRAIN_MPI=1; docs/distributed.md)
import Foundation
import PackageDescription

// ACTIONTRAIN_MPI=1 adds the Open MPI backend (libopenmpi-dev) to the CLI: `mpirun -np N
// actiontrain fit|sweep`. Without it nothing needs MPI (the README's commands, scripts/setup).
let withMPI = ProcessInfo.processInfo.environment["ACTIONTRAIN_MPI"] == "1"
let mpiTargets: [Target] = withMPI ? [
    .systemLibrary(name: "CMPI", pkgConfig: "ompi-c", providers: [.apt(["libopenmpi-dev"]), .brew(["open-mpi"])]),
    .target(name: "MPICollective", dependencies: ["ActionTrain", "CMPI"]),
] : []

let package = Package(
    name: "actiontrain",
    products: [
        .executable(name: "actiontrain", targets: ["actiontrain"]),
        // The libraries a Swift program imports (docs/library.md): ActionRuntime to run models,
        // ActionTrainKit (which re-exports every library module) to train, evaluate and export.
        .library(name: "ActionRuntime", targets: ["ActionRuntime"]),
        .library(name: "ActionTrainKit", targets: ["ActionTrainKit"]),
        .library(name: "Datasets", targets: ["Datasets"]),
        .library(name: "Eval", targets: ["Eval"]),
        .library(name: "Pipelines", targets: ["Pipelines"]),
    ],
    targets: [
        .systemLibrary(
            name: "CBLAS",
            pkgConfig: "openblas",
            providers: [.apt(["libopenblas-dev"]), .brew(["openblas"])]
        ),
        .systemLibrary(
            name: "CZlib",
            pkgConfig: "zlib",
            providers: [.apt(["zlib1g-dev"]), .brew(["zlib"])]
        ),
        .target(name: "PoseCore"),
        // Hand-written SIMD kernels (C: AVX-512, AVX2, portable), chosen at run time.
        .target(name: "CKernels", linkerSettings: [.linkedLibrary("m", .when(platforms: [.linux]))]),
        .target(name: "Datasets", dependencies: ["PoseCore", "CZlib"]),
        .target(name: "ActionRuntime", dependencies: ["PoseCore", "CBLAS", "CKernels"]),
        .target(name: "ActionTrain", dependencies: ["ActionRuntime", "Datasets", "PoseCore"]),
        .target(name: "ModelExport", dependencies: ["ActionRuntime", "PoseCore"]),
        .target(name: "Eval", dependencies: ["PoseCore"]),  // PoseCore only for SeededGenerator
        .target(name: "Pipelines", dependencies: ["ActionTrain", "ActionRuntime", "Datasets", "Eval", "PoseCore"]),
        // Only `@_exported import`s: nothing in the package depends on it.
        .target(
            name: "ActionTrainKit", dependencies: ["ActionRuntime", "ActionTrain", "Datasets", "Eval", "ModelExport", "Pipelines", "PoseCore"]),
        .executableTarget(
            name: "actiontrain",
            dependencies: ["ActionTrain", "ActionRuntime", "Datasets", "Eval", "ModelExport", "Pipelines", "PoseCore"]
                + (withMPI ? ["MPICollective"] : []),
            swiftSettings: withMPI ? [.define("ACTIONTRAIN_MPI")] : []
        ),
        .executableTarget(
            name: "actiontrain-bench",
            dependencies: ["ActionTrain", "ActionRuntime", "Datasets", "Eval", "Pipelines", "PoseCore"]
        ),
        .target(name: "TestSupport", path: "Tests/TestSupport"),
        .testTarget(name: "PoseCoreTests", dependencies: ["PoseCore", "TestSupport"]),
        .testTarget(name: "DatasetsTests", dependencies: ["Datasets", "PoseCore", "TestSupport"]),
        .testTarget(
            // actiontrain for ONNXParity: the onnxruntime check lives in the CLI, not in ModelExport.
            name: "ActionRuntimeTests", dependencies: ["ActionRuntime", "ModelExport", "PoseCore", "TestSupport", "actiontrain"],
            exclude: ["Golden"]),
        .testTarget(name: "ActionTrainTests", dependencies: ["ActionTrain", "ActionRuntime", "Datasets", "PoseCore", "TestSupport"]),
        .testTarget(name: "EvalTests", dependencies: ["Eval", "TestSupport"]),
        .testTarget(
            name: "PipelinesTests", dependencies: ["Pipelines", "ActionTrain", "ActionRuntime", "Datasets", "Eval", "PoseCore", "TestSupport"]),
        .testTarget(name: "CLITests", dependencies: ["actiontrain", "Pipelines", "TestSupport"]),
    ] + mpiTargets,
    swiftLanguageModes: [.v6]
)
