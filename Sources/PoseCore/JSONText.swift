/// Text helpers shared by the writers of JSON by hand (the native dataset writer, reports,
/// `predict`'s JSON Lines), which are faster and byte-stable where Foundation's encoder is not.
public enum JSONText {
    /// `s` as a JSON string literal, with its quotes; `"`, backslash and control characters escaped.
    public static func quote(_ s: String) -> String {
        var r = "\""
        for u in s.unicodeScalars {
            switch u {
            case "\"": r += "\\\""
            case "\\": r += "\\\\"
            case "\n": r += "\\n"
            case "\r": r += "\\r"
            case "\t": r += "\\t"
            default:
                if u.value < 0x20 {
                    let hex = String(u.value, radix: 16)
                    r += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    r.unicodeScalars.append(u)
                }
            }
        }
        return r + "\""
    }
}
