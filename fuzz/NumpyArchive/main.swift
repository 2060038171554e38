import Datasets

/// Any bytes as an .npz archive (zip directory, local headers, stored and deflated entries,
/// .npy headers, arrays): the readers must throw or return, never crash or hang.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzNumpyArchive(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    _ = try? NumpyFormat.parseArchive(bytes, file: "fuzz.npz")
    _ = try? CreateMLFormat.parseArchive(bytes, file: "fuzz.npz")
    var people = NumpyFormat.Options()
    people.people = .pick(.largest)
    people.splitNames = ["0": "train", "1": "test"]
    _ = try? NumpyFormat.parseArchive(bytes, file: "fuzz.npz", options: people)
    return 0
}
