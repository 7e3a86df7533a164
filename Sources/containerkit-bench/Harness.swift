import Foundation

/// Median-of-samples timing, reported as rates; every figure is compared with others from the same run.
enum Harness {
    /// Runs `body` (which processes `count` items) `samples` times after a warm-up; returns the median
    /// items per second.
    static func rate(samples: Int = 7, count: Int, _ body: () -> Void) -> Double {
        body()
        var rates: [Double] = []
        for _ in 0..<samples {
            let start = DispatchTime.now().uptimeNanoseconds
            body()
            let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
            rates.append(Double(count) / max(elapsed, 1e-9))
        }
        rates.sort()
        return rates[rates.count / 2]
    }

    /// Median wall time of `body` in milliseconds.
    static func milliseconds(samples: Int = 7, _ body: () async -> Void) async -> Double {
        await body()
        var times: [Double] = []
        for _ in 0..<samples {
            let start = DispatchTime.now().uptimeNanoseconds
            await body()
            times.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6)
        }
        times.sort()
        return times[times.count / 2]
    }

    static func format(_ value: Double) -> String { String(format: "%.0f", value) }
    static func ratio(_ value: Double) -> String { String(format: "%.3f", value) }
}

/// Keeps results alive so the optimiser cannot drop the work.
nonisolated(unsafe) var benchmarkSink = 0
