/// The direct sums of the definition (see `Conv1d`), accumulated in Double: the reference
/// the tests hold every formulation to. Not used outside tests.
extension Conv1d {
    /// `y [B, To, O]` by the defining sum, accumulated in Double.
    func referenceForward(_ x: UnsafePointer<Float>, batch: Int) -> [Float] {
        let T = inputTime, I = inputs, O = outputs, K = kernel, To = outputTime
        var out = [Float](repeating: 0, count: batch * To * O)
        for b in 0..<batch {
            for t in 0..<To {
                for o in 0..<O {
                    var s = Double(bias[o])
                    for k in 0..<K {
                        let src = t * stride + k * dilation - padding
                        guard src >= 0 && src < T else { continue }
                        for i in 0..<I { s += Double(weight[(o * K + k) * I + i]) * Double(x[(b * T + src) * I + i]) }
                    }
                    out[(b * To + t) * O + o] = Float(s)
                }
            }
        }
        return out
    }

    /// `(dW [O, K, I], dbias [O], dx [B, T, I])` for `dy [B, To, O]` by the defining sums,
    /// accumulated in Double (not accumulated into the network's gradients).
    func referenceBackward(_ x: UnsafePointer<Float>, _ dy: UnsafePointer<Float>, batch: Int)
        -> (dWeight: [Float], dBias: [Float], dx: [Float])
    {
        let T = inputTime, I = inputs, O = outputs, K = kernel, To = outputTime
        var dW = [Double](repeating: 0, count: O * K * I), db = [Double](repeating: 0, count: O)
        var dX = [Double](repeating: 0, count: batch * T * I)
        for b in 0..<batch {
            for t in 0..<To {
                for o in 0..<O {
                    let g = Double(dy[(b * To + t) * O + o])
                    db[o] += g
                    for k in 0..<K {
                        let src = t * stride + k * dilation - padding
                        guard src >= 0 && src < T else { continue }
                        for i in 0..<I {
                            dW[(o * K + k) * I + i] += g * Double(x[(b * T + src) * I + i])
                            dX[(b * T + src) * I + i] += g * Double(weight[(o * K + k) * I + i])
                        }
                    }
                }
            }
        }
        return (dW.map { Float($0) }, db.map { Float($0) }, dX.map { Float($0) })
    }
}
