/// A minimal Protocol Buffers writer: just what ONNX's and Core ML's messages need (varints,
/// 32-bit floats, length-delimited strings, bytes, packed repeated fields and sub-messages).
///
/// Wire format (protobuf encoding spec): each field is a key `(field_number << 3) | wire_type`
/// as a varint, then the value: wire type 0 = varint, 2 = length (varint) + bytes,
/// 5 = 4 little-endian bytes. Negative int64 values are 10-byte two's-complement varints.
struct ProtobufWriter {
    private(set) var bytes: [UInt8] = []

    enum WireType: UInt64 {
        case varint = 0, lengthDelimited = 2, fixed32 = 5
    }

    mutating func varint(_ value: UInt64) {
        var v = value
        while v >= 0x80 {
            bytes.append(UInt8(v & 0x7F) | 0x80)
            v >>= 7
        }
        bytes.append(UInt8(v))
    }

    mutating func key(_ field: Int, _ type: WireType) { varint(UInt64(field) << 3 | type.rawValue) }

    /// An `int64`/`int32`/enum field (negative values as 64-bit two's complement).
    mutating func int(_ field: Int, _ value: Int) {
        key(field, .varint)
        varint(UInt64(bitPattern: Int64(value)))
    }

    mutating func float(_ field: Int, _ value: Float) {
        key(field, .fixed32)
        withUnsafeBytes(of: value.bitPattern.littleEndian) { bytes += $0 }
    }

    mutating func data(_ field: Int, _ value: [UInt8]) {
        key(field, .lengthDelimited)
        varint(UInt64(value.count))
        bytes += value
    }

    mutating func string(_ field: Int, _ value: String) { data(field, Array(value.utf8)) }

    /// A sub-message, written by `body` into a fresh writer.
    mutating func message(_ field: Int, _ body: (inout ProtobufWriter) -> Void) {
        var w = ProtobufWriter()
        body(&w)
        data(field, w.bytes)
    }

    /// A packed `repeated float` field: the values as 4-byte little-endian floats.
    mutating func packedFloats(_ field: Int, _ values: [Float]) {
        key(field, .lengthDelimited)
        varint(UInt64(values.count * 4))
        bytes.reserveCapacity(bytes.count + values.count * 4)
        for v in values { withUnsafeBytes(of: v.bitPattern.littleEndian) { bytes += $0 } }
    }

    /// A packed `repeated bool` field (each a one-byte varint).
    mutating func packedBools(_ field: Int, _ values: [Bool]) { data(field, values.map { $0 ? 1 : 0 }) }

    /// A packed `repeated int64` field.
    mutating func packedInts(_ field: Int, _ values: [Int]) {
        var w = ProtobufWriter()
        for v in values { w.varint(UInt64(bitPattern: Int64(v))) }
        data(field, w.bytes)
    }
}
