import Datasets

/// Any bytes as a raw deflate stream: inflate must throw or return, never crash or hang.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzInflate(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    _ = try? Inflate.decompress(Array(UnsafeBufferPointer(start: data, count: size)), maxOutput: 1 << 24)
    return 0
}
