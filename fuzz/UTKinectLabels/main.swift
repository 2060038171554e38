import Datasets

/// Any bytes as UTKinect's actionLabel.txt: the parser must throw or return, never crash.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzUTKinectLabels(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    _ = try? UTKinectImporter.parseLabels(Array(UnsafeBufferPointer(start: data, count: size)), file: "fuzz")
    return 0
}
