import Datasets

/// Any bytes as one Create ML clip file (Vision keypoints as JSON): the reader must throw or
/// return, never crash or hang. With and without an image size.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCreateMLClip(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    _ = try? CreateMLFolder.parseClip(bytes, file: "fuzz.json", id: "fuzz", options: .init(imageSize: [640, 480]))
    _ = try? CreateMLFolder.parseClip(bytes, file: "fuzz.json", id: "fuzz")
    return 0
}
