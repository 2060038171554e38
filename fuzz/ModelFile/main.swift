import ActionRuntime
import PoseCore

/// Any bytes: the model-file reader must throw or return, never crash, hang or allocate
/// without bound. Each input is decoded twice: as given, and with its preamble repaired
/// (checksums and total size recomputed from the stated lengths) so that mutations reach
/// the JSON header, the limits, the tensor table and the network. A model that loads is run
/// once on a batch of one window.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzModelFile(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    exercise(bytes)
    if size >= 64 {
        var repaired = bytes
        let h = bytes.withUnsafeBytes { Int(clamping: $0.loadUnaligned(fromByteOffset: 16, as: UInt64.self).littleEndian) }
        if h >= 0 && h <= size - 64 {
            let header = Array(bytes[64..<(64 + h)]), body = Array(bytes[(64 + h)...])
            repaired.withUnsafeMutableBytes { raw in
                raw.storeBytes(of: UInt64(body.count).littleEndian, toByteOffset: 24, as: UInt64.self)
                raw.storeBytes(of: CRC32.checksum(header).littleEndian, toByteOffset: 32, as: UInt32.self)
                raw.storeBytes(of: CRC32.checksum(body).littleEndian, toByteOffset: 36, as: UInt32.self)
                raw.storeBytes(of: UInt64(size).littleEndian, toByteOffset: 40, as: UInt64.self)
            }
            exercise(repaired)
        }
    }
    return 0
}

func exercise(_ bytes: [UInt8]) {
    guard let (header, network) = try? ModelFile.load(bytes) else { return }
    guard let model = try? ActionModel(header: header, network: network) else { return }
    guard network.inputShape.count <= 1 << 16 else { return }
    let x = [Float](repeating: 0.5, count: network.inputShape.count)
    _ = try? model.logits(features: x, count: 1)
}
