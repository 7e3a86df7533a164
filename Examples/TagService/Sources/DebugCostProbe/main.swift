import Foundation
import TagServiceCore

// debug-cost-probe <off|on|following_other> <events> <containers directory> <work directory>: the debug page's
// cost on the push path, counted under callgrind by `BENCH_DEBUG_SIDE_BY_SIDE=1 make bench-service` (see
// DebugCostProbe). Prints debug_cost_probe_answered=<pushes answered 200>; exits 1 unless all were.
let arguments = Array(CommandLine.arguments.dropFirst())
guard arguments.count == 4, let mode = DebugCostProbe.Mode(rawValue: arguments[0]), let events = Int(arguments[1]),
    events >= 0
else {
    FileHandle.standardError.write(
        Data("usage: debug-cost-probe <off|on|following_other> <events> <containers> <work directory>\n".utf8)
    )
    exit(64)
}
do {
    let answered = try await DebugCostProbe.run(
        mode: mode,
        events: events,
        containers: arguments[2],
        work: arguments[3]
    )
    print("debug_cost_probe_answered=\(answered)")
    exit(answered == events ? 0 : 1)
} catch {
    FileHandle.standardError.write(Data("debug-cost-probe: \(error)\n".utf8))
    exit(1)
}
