import Datasets
import Foundation
import PoseCore

/// Dataset loading speed and memory (docs/benchmarks.md, "Datasets"):
///
/// - MB/s of the native JSON Lines and CSV readers on one core, on a synthetic Vision-2D
///   dataset (N sequences × 45 frames × 19 joints, x/y/confidence) written to /tmp;
/// - `.npy` load time beside a raw `read()` of the same file (the disk/page-cache anchor),
///   for the array alone and for the whole dataset conversion;
/// - peak RSS of a child process that loads each file, against the float32 size of the data
///   (`frames · joints · 3 · 4` bytes), minus the RSS of a child that loads nothing;
/// - a deflated `.npz` (written by python3's `numpy.savez_compressed`, skipped without numpy):
///   MB/s of decompressed output for `NumpyFormat.read` and for `Inflate.decompress` of the
///   entry's raw deflate stream alone, beside python3's `numpy.load(...)["X"]` of the same file.
///
///     swift run -c release actiontrain-bench parse [--sequences N] [--keep] [--only-npz]
///
/// `--only-npz` skips the text formats and the memory figures (the `.npz` rows only).
enum ParseBench {
    static func run(_ args: [String]) throws {
        if args.first == "--child" { return try child(Array(args.dropFirst())) }
        var n = 4000
        if let k = args.firstIndex(of: "--sequences"), k + 1 < args.count, let v = Int(args[k + 1]) { n = v }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("actiontrain-parse-bench").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let native = dir + "/synth.jsonl", csv = dir + "/synth.csv", npy = dir + "/synth.npy", npz = dir + "/synth.npz"
        let onlyNPZ = args.contains("--only-npz")
        let T = 45, J = 19
        print("generating \(n) sequences x \(T) frames x \(J) joints (x, y, confidence) in \(dir) ...")
        let data = synthetic(n: n, frames: T)
        if !onlyNPZ {
            try NativeFormat.write(data, to: native)
            try writeCSV(data, to: csv)
        }
        try writeNPY(data, to: npy)
        try writeStoredNPZ(npyPath: npy, to: npz)
        let floatBytes = Double(n * T * J * 3 * 4)
        let load = ForeignLoad()
        defer { if !args.contains("--keep") { try? FileManager.default.removeItem(atPath: dir) } }
        if onlyNPZ {
            try compressedNPZ(dir: dir, npy: npy)
            if let share = load.share() { print("\nother processes used \(format(share * 100))% of the machine during the run") }
            return
        }

        print("\nformat        file MB   median s   MB/s   (target >= 150 MB/s on one core)")
        for (name, path, body) in [
            ("native", native, { _ = try NativeFormat.read(native) }),
            ("csv", csv, { _ = try CSVFormat.read(csv) }),
        ] as [(String, String, () throws -> Void)] {
            let mb = Double(try size(path)) / 1e6
            let t = try median(body)
            print(name.padding(toLength: 13, withPad: " ", startingAt: 0) + pad(format(mb)) + pad(format(t, 3), 11) + format(mb / t))
        }

        print("\n.npy load vs raw read of the same file (page cache warm)")
        let npyMB = Double(try size(npy)) / 1e6
        let raw = try median { _ = try rawRead(npy) }
        let array = try median { _ = try NPYArray.read(npy) }
        let full = try median { _ = try NumpyFormat.read(npy, options: .init(skeleton: .visionBody2D)) }
        let fullNPZ = try median { _ = try NumpyFormat.read(npz, options: .init(skeleton: .visionBody2D)) }
        print("  raw read()                 \(format(raw, 3)) s  \(format(npyMB / raw)) MB/s   (anchor)")
        print("  NPYArray.read (X only)     \(format(array, 3)) s  \(format(npyMB / array)) MB/s   ratio to raw \(format(raw / array, 2))")
        print("  NumpyFormat.read (.npy)    \(format(full, 3)) s  \(format(npyMB / full)) MB/s   ratio to raw \(format(raw / full, 2))")
        print("  NumpyFormat.read (.npz)    \(format(fullNPZ, 3)) s  \(format(npyMB / fullNPZ)) MB/s   (stored zip, CRC-32 checked)")
        try compressedNPZ(dir: dir, npy: npy)

        print("\npeak RSS while loading (child process) vs float32 size of the data \(format(floatBytes / 1e6)) MB")
        print("  target: peak - baseline < 1.5 x float32 + 100 MB = \(format((1.5 * floatBytes + 100e6) / 1e6)) MB")
        let baseline = try childPeak(["none", native])
        print("  baseline (no load)         \(format(baseline / 1e6)) MB")
        for kind in ["native", "csv", "npy", "npz"] {
            let path = ["native": native, "csv": csv, "npy": npy, "npz": npz][kind]!
            let peak = try childPeak([kind, path]) - baseline
            print("  " + kind.padding(toLength: 27, withPad: " ", startingAt: 0) + "\(format(peak / 1e6)) MB = \(format(peak / floatBytes, 2)) x float32")
        }
        if let share = load.share() { print("\nother processes used \(format(share * 100))% of the machine during the run") }
    }

    /// The deflated `.npz` rows: python3 writes `synth_z.npz` with `numpy.savez_compressed`
    /// and the entry's raw deflate stream to `synth_z.deflate` (the exact bytes inside the
    /// zip), then times `numpy.load(path)["X"]` (warm-up + median of 3) as the anchor.
    static func compressedNPZ(dir: String, npy: String) throws {
        let npz = dir + "/synth_z.npz", raw = dir + "/synth_z.deflate"
        let script = """
            import sys, time, struct, zipfile
            import numpy as np
            npy, npz, raw = sys.argv[1:4]
            np.savez_compressed(npz, X=np.load(npy))
            with zipfile.ZipFile(npz) as z:
                info = z.getinfo("X.npy")
            with open(npz, "rb") as f:
                f.seek(info.header_offset)
                h = f.read(30)
                n, m = struct.unpack("<HH", h[26:30])
                f.seek(info.header_offset + 30 + n + m)
                open(raw, "wb").write(f.read(info.compress_size))
            def load():
                with np.load(npz) as d:
                    return d["X"]
            load()
            times = []
            for _ in range(3):
                t = time.perf_counter(); load(); times.append(time.perf_counter() - t)
            print(sorted(times)[1])
            """
        print("\n.npz deflated (numpy.savez_compressed), MB/s of decompressed output (page cache warm)")
        guard let out = runPython(script, [npy, npz, raw]), let python = Double(out) else {
            print("  skipped: python3 with numpy is not available")
            return
        }
        let outMB = Double(try size(npy)) / 1e6
        let stream = [UInt8](try Data(contentsOf: URL(fileURLWithPath: raw)))
        var produced = 0
        let inflate = try median { produced = try Inflate.decompress(stream).count }
        guard produced == (try size(npy)) else { throw DatasetError.parse(file: raw, line: 0, reason: "inflated to \(produced) bytes") }
        let full = try median { _ = try NumpyFormat.read(npz, options: .init(skeleton: .visionBody2D)) }
        print("  file \(format(Double(try size(npz)) / 1e6)) MB, X.npy \(format(outMB)) MB (ratio \(format(outMB * 1e6 / Double(stream.count), 2)))")
        print("  numpy.load(...)[\"X\"] (python3)  \(format(python, 3)) s  \(format(outMB / python)) MB/s   (anchor)")
        print("  Inflate.decompress (X.npy entry) \(format(inflate, 3)) s  \(format(outMB / inflate)) MB/s   ratio to numpy \(format(python / inflate, 2))")
        print("  NumpyFormat.read (.npz deflated) \(format(full, 3)) s  \(format(outMB / full)) MB/s   ratio to numpy \(format(python / full, 2))")
    }

    /// Runs `python3 -c script args`; its last output line, or nil if python3 or a module is
    /// missing or the script fails.
    static func runPython(_ script: String, _ args: [String]) -> String? {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["python3", "-c", script] + args
        let pipe = Pipe()
        p.standardOutput = pipe
        p.standardError = FileHandle.nullDevice
        do { try p.run() } catch { return nil }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        guard p.terminationStatus == 0 else { return nil }
        return String(decoding: data, as: UTF8.self).split(separator: "\n").last.map(String.init)
    }

    static func pad(_ s: String, _ n: Int = 10) -> String { s.padding(toLength: n, withPad: " ", startingAt: 0) }

    static func size(_ path: String) throws -> Int {
        (try FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.intValue ?? 0
    }

    static func median(_ body: () throws -> Void) throws -> Double {
        var times: [Double] = []
        try body()  // warm-up (page cache)
        for _ in 0..<3 {
            let start = Clock.now()
            try body()
            times.append(Double(Clock.now() - start) / 1e9)
        }
        return times.sorted()[1]
    }

    static func rawRead(_ path: String) throws -> Int {
        let fd = open(path, O_RDONLY)
        defer { close(fd) }
        let total = try size(path)
        var buffer = [UInt8](repeating: 0, count: total)
        var done = 0
        buffer.withUnsafeMutableBytes { b in
            while done < total {
                let r = read(fd, b.baseAddress! + done, total - done)
                if r <= 0 { break }
                done += r
            }
        }
        return done
    }

    /// Vision 2D poses: smooth trajectories with 2 decimals of pixels, some joints absent.
    static func synthetic(n: Int, frames T: Int) -> Dataset {
        var g = SeededGenerator(seed: 7)
        let sk = Skeleton.visionBody2D
        let J = sk.jointCount
        var seqs: [PoseSequence] = []
        for k in 0..<n {
            var coords = [Float](repeating: 0, count: T * J * 2)
            var present = [UInt8](repeating: 0, count: T * J)
            var conf = [Float](repeating: 0, count: T * J)
            let cx = Float(g.next() % 1000) + 400, cy = Float(g.next() % 500) + 300
            for t in 0..<T {
                for j in 0..<J {
                    if g.next() % 20 == 0 { continue }  // 5 % absent
                    let x = cx + Float(j * 13 % 90) + Float(t) * 1.37 + Float(g.next() % 1000) / 100
                    let y = cy + Float(j * 29 % 170) - Float(t) * 0.61 + Float(g.next() % 1000) / 100
                    coords[(t * J + j) * 2] = (x * 100).rounded() / 100
                    coords[(t * J + j) * 2 + 1] = (y * 100).rounded() / 100
                    present[t * J + j] = 1
                    conf[t * J + j] = Float(50 + g.next() % 50) / 100
                }
            }
            seqs.append(
                PoseSequence(
                    id: "clip-\(k)", label: ["squat", "wave", "jump", "clap"][k % 4], group: "p\(k % 37)", jointCount: J,
                    dimensions: 2, frameCount: T, coordinates: coords, present: present, confidence: conf))
        }
        return Dataset(name: "synth", skeleton: sk, sequences: seqs, frameRate: 30, imageSize: [1920, 1080])
    }

    static func writeCSV(_ d: Dataset, to path: String) throws {
        let sk = d.skeleton, J = sk.jointCount
        var out = "sequence,label,group,frame," + sk.joints.map { "\($0)_x,\($0)_y,\($0)_c" }.joined(separator: ",") + "\n"
        for s in d.sequences {
            for f in 0..<s.frameCount {
                out += "\(s.id),\(s.label!),\(s.group!),\(f)"
                for j in 0..<J {
                    if s.present[f * J + j] == 0 {
                        out += ",,,0"
                    } else {
                        out += ",\(s.coordinates[(f * J + j) * 2]),\(s.coordinates[(f * J + j) * 2 + 1]),\(s.confidence![f * J + j])"
                    }
                }
                out += "\n"
            }
        }
        try out.write(toFile: path, atomically: true, encoding: .utf8)
    }

    /// X as float32 [N, T, J, 3] (NaN for absent points).
    static func writeNPY(_ d: Dataset, to path: String) throws {
        let N = d.sequences.count, T = d.sequences[0].frameCount, J = d.skeleton.jointCount
        var header = Array("{'descr': '<f4', 'fortran_order': False, 'shape': (\(N), \(T), \(J), 3), }".utf8)
        while (10 + header.count + 1) % 64 != 0 { header.append(0x20) }
        header.append(0x0A)
        var out: [UInt8] = [0x93] + Array("NUMPY".utf8) + [1, 0, UInt8(header.count & 0xFF), UInt8(header.count >> 8)] + header
        var x = [Float](repeating: .nan, count: N * T * J * 3)
        for (n, s) in d.sequences.enumerated() {
            for i in 0..<(T * J) where s.present[i] == 1 {
                x[(n * T * J + i) * 3] = s.coordinates[2 * i]
                x[(n * T * J + i) * 3 + 1] = s.coordinates[2 * i + 1]
                x[(n * T * J + i) * 3 + 2] = s.confidence![i]
            }
        }
        x.withUnsafeBytes { out += $0 }
        try Data(out).write(to: URL(fileURLWithPath: path))
    }

    /// A stored (uncompressed) zip holding X.npy, as numpy.savez writes (without ZIP64).
    static func writeStoredNPZ(npyPath: String, to path: String) throws {
        let npy = [UInt8](try Data(contentsOf: URL(fileURLWithPath: npyPath)))
        var crc: UInt32 = 0xFFFF_FFFF
        var table = [UInt32](repeating: 0, count: 256)
        for i in 0..<256 {
            var c = UInt32(i)
            for _ in 0..<8 { c = c & 1 != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
            table[i] = c
        }
        for b in npy { crc = table[Int((crc ^ UInt32(b)) & 0xFF)] ^ (crc >> 8) }
        crc = ~crc
        func u16(_ v: Int) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF)] }
        func u32(_ v: UInt32) -> [UInt8] { (0..<4).map { UInt8(v >> (8 * $0) & 0xFF) } }
        let name = Array("X.npy".utf8)
        var out = u32(0x0403_4B50) + u16(20) + u16(0) + u16(0) + u16(0) + u16(0) + u32(crc)
        out += u32(UInt32(npy.count)) + u32(UInt32(npy.count)) + u16(name.count) + u16(0) + name
        out += npy
        let dir = out.count
        var cd = u32(0x0201_4B50) + u16(20) + u16(20) + u16(0) + u16(0) + u16(0) + u16(0) + u32(crc)
        cd += u32(UInt32(npy.count)) + u32(UInt32(npy.count)) + u16(name.count) + u16(0) + u16(0) + u16(0) + u16(0)
        cd += u32(0) + u32(0) + name
        out += cd
        out += u32(0x0605_4B50) + u16(0) + u16(0) + u16(1) + u16(1) + u32(UInt32(cd.count)) + u32(UInt32(dir)) + u16(0)
        try Data(out).write(to: URL(fileURLWithPath: path))
    }

    static func childPeak(_ args: [String]) throws -> Double {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
        p.arguments = ["parse", "--child"] + args
        let pipe = Pipe()
        p.standardOutput = pipe
        try p.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard let v = Double(text.split(separator: "\n").last ?? "") else { throw DatasetError.parse(file: "child", line: 0, reason: text) }
        return v
    }

    /// Loads one file and prints the process's peak RSS in bytes.
    static func child(_ args: [String]) throws {
        var keep: Dataset? = nil
        switch args[0] {
        case "native": keep = try NativeFormat.read(args[1])
        case "csv": keep = try CSVFormat.read(args[1])
        case "npy", "npz": keep = try NumpyFormat.read(args[1], options: .init(skeleton: .visionBody2D))
        default: break
        }
        // Linux keeps ru_maxrss across fork+exec (the parent's peak would show), so read the
        // exec'd image's own high-water mark, VmHWM.
        var peak = 0.0
        #if os(Linux)
            let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
            for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
                peak = (Double(line.split(separator: " ")[1]) ?? 0) * 1024
            }
        #else
            var usage = rusage()
            getrusage(RUSAGE_SELF, &usage)
            peak = Double(usage.ru_maxrss)  // bytes on macOS
        #endif
        print(keep?.sequences.count ?? 0)
        print(peak)
    }
}
