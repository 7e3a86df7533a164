import ContainerKit
import Foundation

/// `dedup_overhead`: what checking and remembering an event ID costs a push. The same stream is pushed into two
/// sessions of one runtime, one with a distinct ID per event (as a client's message IDs: 36 characters) and
/// one without, chunk by chunk of the stream, so both sides meet the same machine conditions. The figure is
/// 1 − (events/s with IDs ÷ events/s without), the median over the chunks' pairs. The session with IDs is at its bound
/// (1,000 IDs remembered, the stream being longer) from the first round on: each push looks its ID up, forgets
/// the oldest and remembers its own.
enum DedupBench {
    static func run(manager: TagManager, events: [(name: String, parameters: ValueMap)]) -> Double {
        let plain = manager.makeDataLayer()
        let identified = manager.makeDataLayer()
        let ids = events.indices.map { index -> String in
            let hex = String(index, radix: 16)
            return "5f0c2d1e-7a4b-4c3d-9e8f-" + String(repeating: "0", count: max(0, 12 - hex.utf8.count)) + hex
        }
        // Warm-up: both sessions see the whole stream once (the one with IDs fills its bound).
        for index in events.indices {
            plain.push(event: events[index].name, parameters: events[index].parameters)
            identified.push(event: events[index].name, parameters: events[index].parameters, eventID: ids[index])
        }
        // `CONTAINERKIT_BENCH_DEDUP_SIDE=with|without` pushes the stream 20 times more (or
        // `CONTAINERKIT_BENCH_DEDUP_ROUNDS` times) into one side only (for a profiler or an instruction count).
        let environment = ProcessInfo.processInfo.environment
        if let side = environment["CONTAINERKIT_BENCH_DEDUP_SIDE"] {
            for _ in 0..<(environment["CONTAINERKIT_BENCH_DEDUP_ROUNDS"].flatMap { Int($0) } ?? 20) {
                for index in events.indices {
                    if side == "with" {
                        identified.push(
                            event: events[index].name,
                            parameters: events[index].parameters,
                            eventID: ids[index]
                        )
                    } else {
                        plain.push(event: events[index].name, parameters: events[index].parameters)
                    }
                }
            }
            return 0
        }
        // Each chunk of 500 events is pushed into both sessions back to back (which goes first alternates): a pair
        // meets the same machine conditions, and a pair a preemption or a switch of the VM's state cut into is an
        // outlier the median leaves out.
        let size = 500
        var ratios: [Double] = []
        for round in 0..<8 {
            var start = 0
            var pair = 0
            while start < events.count {
                let range = start..<min(events.count, start + size)
                var without: UInt64 = 0
                var with: UInt64 = 0
                for side in (pair + round) % 2 == 0 ? [false, true] : [true, false] {
                    let begin = DispatchTime.now().uptimeNanoseconds
                    if side {
                        for index in range {
                            identified.push(
                                event: events[index].name,
                                parameters: events[index].parameters,
                                eventID: ids[index]
                            )
                        }
                        with = DispatchTime.now().uptimeNanoseconds - begin
                    } else {
                        for index in range {
                            plain.push(event: events[index].name, parameters: events[index].parameters)
                        }
                        without = DispatchTime.now().uptimeNanoseconds - begin
                    }
                }
                // Rates over the same events: the ratio of rates is the inverse ratio of times.
                ratios.append(Double(without) / Double(max(with, 1)))
                start += size
                pair += 1
            }
        }
        ratios.sort()
        benchmarkSink &+= identified.seenEventIDs.count
        return 1 - ratios[ratios.count / 2]
    }
}
