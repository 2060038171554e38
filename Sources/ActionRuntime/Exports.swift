// `import ActionRuntime` is the one import of an inference service: the PoseCore types in the
// runtime's API (`PosePoint`, `PoseSequence`, `Skeleton`, `InputSpec`) come with it.
@_exported import PoseCore
