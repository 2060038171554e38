import Dispatch
import Foundation
import PoseCore
import XCTest

@testable import ActionRuntime

/// An inference service runs one model per thread. Layers that split their work
/// (`BLAS.parallel`) must then give the same results as alone (to rounding: OpenBLAS's thread
/// count is one setting for the whole process) and leave that count as configured.
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
                if zip(y, expected).contains(where: { abs($0 - $1) > 1e-5 * max(1, abs($1)) }) { mismatches[t] += 1 }
            }
        }
        XCTAssertEqual((0..<threads).map { mismatches[$0] }, [Int](repeating: 0, count: threads), "rounds whose logits differ")
        XCTAssertEqual(BLAS.threads, 2, "the thread count after concurrent parallel regions")
        XCTAssertEqual(BLAS.openBLASThreads, 2, "OpenBLAS's own thread count after concurrent parallel regions")
    }

    func testOverlappingParallelRegionsRestoreTheConfiguredThreadCount() {
        // Region B starts while region A runs (so OpenBLAS reads 1 thread then) and ends after
        // A: the count after both must be the configured one, not what B saw on entry.
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
        XCTAssertEqual(BLAS.openBLASThreads, 2)
    }
}
