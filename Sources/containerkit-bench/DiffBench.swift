import ContainerKit
import ContainerKitDiff
import Foundation

/// `diff_events_per_s`: `containerkit diff`'s replay of 100,000 pushes (the bundled traffic log, cycled)
/// through the two bundled versions of GTM-MUSIC01, and `diff_vs_run`, its ratio to the rate of a single
/// `run` session evaluating the same pushes on the old version alone, measured in the same run (the issue's
/// target is at least 1/3). Both loops only evaluate; neither formats output.
enum DiffBench {
    static let oldPath = "Containers/GTM-MUSIC01.json"
    static let newPath = "Containers/next/GTM-MUSIC01.json"
    static let eventsPath = "Containers/events/music-traffic.jsonl"
    static let count = 100_000

    static func run() async {
        guard let text = try? String(contentsOfFile: eventsPath, encoding: .utf8),
            let diff = try? await ContainerDiff.load(old: oldPath, new: newPath)
        else {
            print("notice: \(oldPath), \(newPath) or \(eventsPath) missing; diff benchmark skipped")
            return
        }
        let recorded: [ValueMap] = text.split(separator: "\n").compactMap { line in
            (try? Value(json: String(line)))?.objectValue
        }
        guard !recorded.isEmpty else { return }
        let pushes = (0..<count).map { recorded[$0 % recorded.count] }
        let context = ClientContext(appID: "com.example.music")
        let quiet = StandardErrorLogger(minimumLevel: .none)

        var differing = 0
        func runOnce() {
            let manager = TagManager(logger: quiet, defaultContext: context, randomSource: .seeded(0))
            let handler = ClosureTagHandler { _ in }
            for path in diff.tagClassPaths { manager.register(tagHandler: handler, for: path) }
            manager.add(diff.old)
            let session = manager.makeDataLayer()
            var fired = 0
            for push in pushes { fired += session.push(push).fired.count }
            benchmarkSink &+= fired
        }
        func diffOnce() {
            var replay = diff.makeReplay(context: context, logger: quiet)
            for (i, push) in pushes.enumerated() { replay.replay(push, line: i + 1) }
            differing = replay.summary.eventsWithDifferences
        }
        // Interleaved rounds (run, then diff, back to back) so each round's ratio compares runs made under
        // the same machine conditions; the figures are medians of the rounds.
        runOnce()
        diffOnce()
        var runRates: [Double] = []
        var diffRates: [Double] = []
        var ratios: [Double] = []
        for _ in 0..<5 {
            let run = rate(runOnce)
            let diffed = rate(diffOnce)
            runRates.append(run)
            diffRates.append(diffed)
            ratios.append(diffed / run)
        }
        func rate(_ body: () -> Void) -> Double {
            let start = DispatchTime.now().uptimeNanoseconds
            body()
            return Double(count) / max(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9, 1e-9)
        }
        func median(_ xs: [Double]) -> Double { xs.sorted()[xs.count / 2] }
        let runRate = median(runRates)
        let diffRate = median(diffRates)
        print("diff_events=\(count) diff_events_with_differences=\(differing)")
        print("run_events_per_s=\(Harness.format(runRate))")
        print("diff_events_per_s=\(Harness.format(diffRate))")
        print("diff_vs_run=\(Harness.ratio(median(ratios)))")
    }
}
