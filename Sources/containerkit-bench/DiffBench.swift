import ContainerKit
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
        let runRate = Harness.rate(samples: 3, count: count) {
            let manager = TagManager(logger: quiet, defaultContext: context, randomSource: .seeded(0))
            let handler = ClosureTagHandler { _ in }
            for path in diff.tagClassPaths { manager.register(tagHandler: handler, for: path) }
            manager.add(diff.old)
            let session = manager.makeDataLayer()
            var fired = 0
            for push in pushes { fired += session.push(push).fired.count }
            benchmarkSink &+= fired
        }
        let diffRate = Harness.rate(samples: 3, count: count) {
            var replay = diff.makeReplay(context: context, logger: quiet)
            for (i, push) in pushes.enumerated() { replay.replay(push, line: i + 1) }
            differing = replay.summary.eventsWithDifferences
        }
        print("diff_events=\(count) diff_events_with_differences=\(differing)")
        print("run_events_per_s=\(Harness.format(runRate))")
        print("diff_events_per_s=\(Harness.format(diffRate))")
        print("diff_vs_run=\(Harness.ratio(diffRate / runRate))")
    }
}
