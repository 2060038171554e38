import Dispatch
import Foundation
import PoseCore
import XCTest

@testable import ActionRuntime

/// An inference service runs one model per thread. Layers that split their work
/// (`BLAS.parallel`, and `BLAS.gemm`'s blocks) must then give the same bits as alone: OpenBLAS
/// stays on one thread, so no thread's call changes what another computes.
final class ConcurrencyTests: XCTestCase {
    func testModelsOnSeveralThreadsAgreeWithOneThreadAndRestoreTheThreadCount() throws {
        let saved = BLAS.threads
        defer { BLAS.threads = saved }
        BLAS.threads = 2
        let layers: [LayerSpec] = [
            .conv1d(inputs: 12, outputs: 32, kernel: 5, stride: 1, dilation: 1, padding: 2), .relu,
            .conv1d(inputs: 32, outputs: 32, kernel: 5, stride: 1, dilation: 1, padding: 2), .relu,
            .globalAveragePool, .linear(inputs: 32, outputs: 4),
        ]
        let input = Shape(time: 30, channels: 12), batch = 32
        var g = SeededGenerator(seed: 9)
        let x = (0..<(batch * input.count)).map { _ in g.nextSymmetric(1) }
        func logits(_ net: Network) -> [Float] {
            x.withUnsafeBufferPointer { Array(UnsafeBufferPointer(start: net.forward($0.baseAddress!, batch: batch), count: batch * 4)) }
        }
        let reference = try Network(layers: layers, input: input)
        reference.initialize(seed: 1)
        let expected = logits(reference)

        let threads = 4, rounds = 25
        let nets = try (0..<threads).map { _ in try Network(layers: layers, input: input) }
        for net in nets { net.parameters.update(from: reference.parameters, count: net.parameterCount) }
        let mismatches = UnsafeMutablePointer<Int>.allocate(capacity: threads)
        mismatches.initialize(repeating: 0, count: threads)
        defer { mismatches.deallocate() }
        concurrentlyPerform(iterations: threads) { t in  // each thread its own network and count
            for _ in 0..<rounds {
                let y = logits(nets[t])
                if zip(y, expected).contains(where: { $0.bitPattern != $1.bitPattern }) { mismatches[t] += 1 }
            }
        }
        XCTAssertEqual((0..<threads).map { mismatches[$0] }, [Int](repeating: 0, count: threads), "rounds whose logits differ")
        XCTAssertEqual(BLAS.threads, 2, "the thread count after concurrent parallel regions")
        XCTAssertEqual(BLAS.openBLASThreads, 1, "OpenBLAS's own thread count: always one")
    }

    /// The layer families of a loaded model, about the recipe's sizes: an MLP, a convnet
    /// (Winograd), a TCN (dilated convolutions, a 1-tap residual projection and a strided
    /// convolution: no Winograd transform), an ST-GCN (graph convolutions over partitions and
    /// over time) and an FTP (a Fourier pyramid of 24 · 7 · 4 values, standardised), on
    /// `[30, 24]` windows of 8 joints in 3D.
    static let input = Shape(time: 30, channels: 24)
    static let families: [(name: String, layers: [LayerSpec])] = {
        let J = 8, I = 3, w = 64
        let identity = (0..<(J * J)).map { Float($0 % (J + 1) == 0 ? 1 : 0) }
        let neighbours = (0..<(J * J)).map { e -> Float in abs(e / J - e % J) == 1 ? 0.5 : 0 }
        let spatial = [identity, neighbours, neighbours.map { $0 / 2 }]
        return [
            ("mlp", [.flatten, .linear(inputs: 720, outputs: 256), .relu, .linear(inputs: 256, outputs: 5)]),
            (
                "convnet",
                [
                    .conv1d(inputs: 24, outputs: w, kernel: 5, stride: 1, dilation: 1, padding: 2), .relu,
                    .conv1d(inputs: w, outputs: 2 * w, kernel: 5, stride: 1, dilation: 1, padding: 2), .relu, .globalAveragePool,
                    .linear(inputs: 2 * w, outputs: 5),
                ]
            ),
            (
                "tcn",
                [
                    .conv1d(inputs: 24, outputs: w, kernel: 3, stride: 1, dilation: 1, padding: 1), .relu,
                    .residual(
                        body: [.conv1d(inputs: w, outputs: 2 * w, kernel: 3, stride: 1, dilation: 2, padding: 2), .relu],
                        shortcut: [.conv1d(inputs: w, outputs: 2 * w, kernel: 1, stride: 1, dilation: 1, padding: 0)]),
                    .conv1d(inputs: 2 * w, outputs: w, kernel: 3, stride: 2, dilation: 1, padding: 1), .relu, .globalAveragePool,
                    .linear(inputs: w, outputs: 5),
                ]
            ),
            (
                "stgcn",
                [
                    .graphConv(joints: J, inputs: I, outputs: 32, kernel: 1, adjacency: spatial), .relu,
                    .graphConv(joints: J, inputs: 32, outputs: 32, kernel: 9, adjacency: [identity]), .relu,
                    .globalAveragePool, .linear(inputs: J * 32, outputs: 5),
                ]
            ),
            (
                "ftp",
                [
                    .fourierPyramid(levels: [1, 2, 4], coefficients: 4),
                    .standardize(mean: (0..<672).map { Float($0 % 9) * 0.5 }, scale: (0..<672).map { 0.25 + Float($0 % 4) * 0.125 }),
                    .linear(inputs: 672, outputs: 5),
                ]
            ),
        ]
    }()

    /// A loaded model's network (frozen) never calls OpenBLAS, so its results cannot depend on
    /// OpenBLAS's thread count, which is one setting for the process that other threads change
    /// (`BLAS.parallel`): the same bits with 1, 2 or 3 threads configured, and on 4 threads at
    /// once sharing the weights (replicas) as on one, at batch 1, 3 and 24. (Before OpenBLAS
    /// was kept out of frozen layers, the TCN and ST-GCN differed in the last bits here with
    /// OpenBLAS's Haswell kernel.)
    func testFrozenNetworksGiveTheSameBitsWhateverTheThreads() throws {
        let saved = BLAS.threads
        defer { BLAS.threads = saved }
        let input = Self.input, batches = [1, 3, 24]
        var g = SeededGenerator(seed: 4)
        let x = (0..<(64 * input.count)).map { _ in g.nextSymmetric(2) }
        for (name, layers) in Self.families {
            let net = try Network(layers: layers, input: input)
            net.initialize(seed: 3)
            net.freeze()
            func run(_ n: Network) -> [[UInt32]] { batches.map { b in n.predictLogits(Array(x[0..<(b * input.count)]), batch: b).map(\.bitPattern) } }
            BLAS.threads = 1
            let expected = run(net)
            for threads in [2, 3] {
                BLAS.threads = threads
                XCTAssertEqual(run(net), expected, "\(name): \(threads) threads configured vs 1")
            }
            BLAS.threads = 2
            let callers = 4, rounds = 2
            let replicas = (0..<callers).map { _ in net.replica() }
            let results = UnsafeMutablePointer<[[[UInt32]]]>.allocate(capacity: callers)
            results.initialize(repeating: [], count: callers)
            defer { results.deinitialize(count: callers).deallocate() }
            concurrentlyPerform(iterations: callers) { t in  // each caller its own replica and slot
                for _ in 0..<rounds { results[t].append(run(replicas[t])) }
            }
            for t in 0..<callers {
                for (r, y) in results[t].enumerated() { XCTAssertEqual(y, expected, "\(name): caller \(t), round \(r) vs serial") }
            }
        }
    }

    func testOverlappingParallelRegionsKeepTheConfiguredThreadCount() {
        // Region B starts while region A runs and ends after A: inside, a part reads 1 thread;
        // after both, the count is the configured one and OpenBLAS still runs one thread.
        let saved = BLAS.threads
        defer { BLAS.threads = saved }
        BLAS.threads = 2
        let aInside = DispatchSemaphore(value: 0), bInside = DispatchSemaphore(value: 0)
        let aDone = DispatchSemaphore(value: 0), bDone = DispatchSemaphore(value: 0)
        // Written by thread B before bDone is signalled and read after waiting for it.
        final class Seen: @unchecked Sendable { var threads = 0, openBLAS = 0 }
        let seen = Seen()
        Thread {
            BLAS.parallel(2) { p in
                guard p == 0 else { return }
                aInside.signal()
                bInside.wait()
            }
            aDone.signal()
        }.start()
        Thread {
            aInside.wait()
            BLAS.parallel(2) { p in
                guard p == 0 else { return }
                seen.threads = BLAS.threads
                seen.openBLAS = BLAS.openBLASThreads
                bInside.signal()
                aDone.wait()
            }
            bDone.signal()
        }.start()
        XCTAssertEqual(bDone.wait(timeout: .now() + 30), .success, "the regions did not finish")
        XCTAssertEqual(seen.threads, 1, "inside a region, layers must not split again")
        XCTAssertEqual(seen.openBLAS, 1, "inside a region, OpenBLAS runs one thread per call")
        XCTAssertEqual(BLAS.threads, 2)
        XCTAssertEqual(BLAS.openBLASThreads, 1)
    }
}
