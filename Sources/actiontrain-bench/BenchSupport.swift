import Foundation

/// Timing helpers shared by the benchmarks.
enum Clock {
    static func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

    /// Median seconds per call of `body`, over `reps` repetitions of at least `minSeconds` each.
    static func median(reps: Int = 5, minSeconds: Double = 0.1, _ body: () -> Void) -> Double {
        body()  // warm-up
        var perCall: [Double] = []
        for _ in 0..<reps {
            var calls = 0
            let start = now()
            var elapsed = 0.0
            repeat {
                body()
                calls += 1
                elapsed = Double(now() - start) / 1e9
            } while elapsed < minSeconds
            perCall.append(elapsed / Double(calls))
        }
        return perCall.sorted()[perCall.count / 2]
    }
}

/// Share of the machine's CPU time used by *other* processes over an interval, from
/// /proc/stat minus this process's own time (as ../shared/bench/guard.py reports it).
struct ForeignLoad {
    private var startTotal = 0.0, startBusy = 0.0, startSelf = 0.0

    init() { (startTotal, startBusy, startSelf) = ForeignLoad.sample() }

    func share() -> Double? {
        let (t, b, s) = ForeignLoad.sample()
        guard t > startTotal else { return nil }
        return max(0, ((b - startBusy) - (s - startSelf)) / (t - startTotal))
    }

    private static func sample() -> (total: Double, busy: Double, own: Double) {
        guard let stat = try? String(contentsOfFile: "/proc/stat", encoding: .utf8),
            let cpu = stat.split(separator: "\n").first
        else { return (0, 0, 0) }
        let v = cpu.split(separator: " ").dropFirst().compactMap { Double($0) }
        guard v.count >= 5 else { return (0, 0, 0) }
        let total = v.reduce(0, +), idle = v[3] + v[4]
        let own = processCPUSeconds() * Double(sysconf(Int32(_SC_CLK_TCK)))
        return (total, total - idle, own)
    }

    /// CPU seconds this process has used, user and system, all threads.
    static func processCPUSeconds() -> Double {
        var usage = rusage()
        #if os(Linux)
            getrusage(RUSAGE_SELF.rawValue, &usage)
        #else
            getrusage(RUSAGE_SELF, &usage)
        #endif
        func seconds(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }
}

func format(_ v: Double, _ digits: Int = 1) -> String { String(format: "%.\(digits)f", v) }

/// A benchmark's command line: `--name value` options and `--flag`s, each known in advance.
struct BenchArguments {
    private var values: [String: String] = [:], flags: Set<String> = []

    init(_ args: [String], options: Set<String>, flags known: Set<String>) throws {
        var i = 0
        while i < args.count {
            if options.contains(args[i]) && i + 1 < args.count {
                values[args[i]] = args[i + 1]
                i += 2
            } else if known.contains(args[i]) {
                flags.insert(args[i])
                i += 1
            } else {
                throw NSError(domain: "bench", code: 2, userInfo: [NSLocalizedDescriptionKey: "unknown option \(args[i])"])
            }
        }
    }

    /// The option's value (`default` when not given or not a number).
    func int(_ name: String, default d: Int) -> Int { values[name].flatMap { Int($0) } ?? d }

    func has(_ flag: String) -> Bool { flags.contains(flag) }
}
