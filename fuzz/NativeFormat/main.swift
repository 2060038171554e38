import Datasets

/// Any bytes: the native reader (and the JSON value parser behind headers and schema files)
/// must throw or return, never crash or hang.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzNativeFormat(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    _ = try? NativeFormat.parse(bytes, file: "fuzz")
    // Several people per frame, through each kind of policy.
    _ = try? NativeFormat.parse(bytes, file: "fuzz", options: .init(minConfidence: 0.3, people: .split))
    _ = try? NativeFormat.parse(bytes, file: "fuzz", options: .init(people: .pick(.central)))
    _ = try? NativeFormat.parse(bytes, file: "fuzz", options: .init(people: .bodies(2)))
    _ = try? JSONValue.parse(bytes)
    return 0
}
