// swift-tools-version:6.0
// The examples of docs/library.md: a package of its own that uses actiontrain as a library,
// from the checkout two folders up. The test suite builds and runs it
// (Tests/CLITests/LibraryExamplesTests.swift); docs/library.md shows these files as they are.
import PackageDescription

let package = Package(
    name: "LibraryExamples",
    dependencies: [
        // In your package: .package(url: "<the actiontrain repository>", branch: "main"), or a path.
        .package(name: "actiontrain", path: "../..")
    ],
    targets: [
        .executableTarget(
            name: "library-examples",
            dependencies: [
                .product(name: "ActionTrainKit", package: "actiontrain"),  // training, evaluation, export
                .product(name: "ActionRuntime", package: "actiontrain"),  // inference alone
                .product(name: "Datasets", package: "actiontrain"),  // the stream example's recording
            ],
            path: "Sources/LibraryExamples")
    ],
    swiftLanguageModes: [.v6]
)
