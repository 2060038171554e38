// The toolkit as one import for a Swift program that trains, evaluates or exports models
// (docs/library.md): `import ActionTrainKit` brings every library module's public API.
//
// - PoseCore: poses, skeletons, the input description (`InputSpec`), features, windows;
// - Datasets: file readers and importers (`DatasetLoader`), splits, lint, augmentation;
// - ActionRuntime: model files and the inference runtime (`ActionModel`, `StreamSession`,
//   `EventDetector`, `TrackedStream`), which an inference service imports alone;
// - ActionTrain: `TrainingConfig`, the recipe, the trainer, checkpoints;
// - Pipelines: fit and evaluation runs (`FitRun`, `RunFolder`, `Evaluation`);
// - Eval: metrics, reports (`EvalReport`, `Reports`, `TextReport`) and the regression gate;
// - ModelExport: export to other formats (`ONNXExport`).
//
// The modules stay separate (and are built and tested as such); this one only re-exports
// them, so the package's dependency direction is unchanged.
@_exported import ActionRuntime
@_exported import ActionTrain
@_exported import Datasets
@_exported import Eval
@_exported import ModelExport
@_exported import Pipelines
@_exported import PoseCore
