/// The input-gradient buffers of one network's layers, shared.
///
/// Backward needs a layer's input gradient only until the layer before it has read it: in a
/// chain, layer j − 1's backward reads layer j's `dx` and writes its own, after which layer j's
/// is dead. So instead of every layer owning a `dx` as large as its input at the training batch
/// (an ST-GCN block has about ten, 5.9 MB each at batch 64 on 19 joints), the chains of a
/// network (`LayerChain.pool`) hand each `PooledInputGradient` layer, just before its backward,
/// one of a few shared buffers: one that holds neither the gradient the layer is about to read
/// nor a gradient a residual block still needs (`pin`). A buffer grows to the largest request
/// it has had; the pool adds a buffer only when all of them are in use, so it holds the
/// largest number of gradients alive at once: two in a plain chain, about four with residual
/// blocks.
///
/// The results are the bits of private buffers: every pooled layer writes all of its input
/// gradient before returning it (never accumulates into what the buffer held), and no buffer
/// is handed out while a gradient in it may still be read (tested against a network without a
/// pool, `Network(…, sharedGradients: false)`).
final class GradientPool {
    private(set) var buffers: [Buffer] = []
    private var pinned: [UnsafePointer<Float>] = []

    /// A buffer holding none of `live` and no pinned gradient; a new one when all do.
    func buffer(avoiding live: UnsafePointer<Float>?...) -> Buffer {
        func holds(_ b: Buffer, _ p: UnsafePointer<Float>?) -> Bool {
            guard let p else { return false }
            let start = UnsafePointer(b.pointer)
            return p >= start && p < start + b.capacity
        }
        if let free = buffers.first(where: { b in !live.contains { holds(b, $0) } && !pinned.contains { holds(b, $0) } }) {
            return free
        }
        let b = Buffer()
        buffers.append(b)
        return b
    }

    /// Keeps the buffer holding `p` (when it is one of the pool's) from being handed out until
    /// the matching `unpin`.
    func pin(_ p: UnsafePointer<Float>?) {
        if let p { pinned.append(p) }
    }

    /// Releases the last pin made with a non-nil pointer, `p` being that pointer (or nil: none was made).
    func unpin(_ p: UnsafePointer<Float>?) {
        guard let p else { return }
        precondition(pinned.last == p, "GradientPool: unpinned out of order")
        pinned.removeLast()
    }

    /// Values held by all the buffers (the tests compare it with private buffers').
    var capacity: Int { buffers.reduce(0) { $0 + $1.capacity } }
}

/// A layer whose backward writes its whole input gradient into `dx`, never reading what the
/// buffer held before, and returns it (or passes `dy` through, or returns nil): a chain with a
/// pool may swap in a shared buffer before each backward.
protocol PooledInputGradient: Layer {
    var dx: Buffer { get set }
}
