import Foundation

/// Small inline SVG charts drawn by the service (no script, no external file): stacked bars of fired, not fired
/// and blocked counts, and a line over time. Colours are presentation attributes, not styles, so the page's
/// Content-Security-Policy (no inline style) allows them.
enum DebugCharts {
    static let fired = "#2e7d32"
    static let notFired = "#9e9e9e"
    static let blocked = "#c62828"

    /// Stacked bars, one per bucket (oldest first): fired at the bottom, then not fired, then blocked.
    static func bars(_ counts: [DebugOverview.Counts], label: String, height: Int = 28, barWidth: Int = 5) -> String {
        let width = counts.count * (barWidth + 1)
        let highest = max(1, counts.map { $0.fired + $0.notFired + $0.blocked }.max() ?? 1)
        var svg = start("bars", width: width, height: height, label: label)
        for (index, bucket) in counts.enumerated() {
            var top = height
            for (value, colour) in [(bucket.fired, fired), (bucket.notFired, notFired), (bucket.blocked, blocked)]
            where value > 0 {
                let size = max(1, value * height / highest)
                top -= size
                svg.raw("<rect x=\"\(index * (barWidth + 1))\" y=\"\(top)\" width=\"\(barWidth)\" height=\"\(size)\"")
                svg.raw(" fill=\"\(colour)\"/>")
            }
        }
        svg.raw("</svg>")
        return svg.string
    }

    /// A line through `values` (oldest first; `nil` leaves a gap), scaled to the highest.
    static func line(_ values: [Double?], label: String, width: Int = 360, height: Int = 48) -> String {
        let highest = max(1e-9, values.compactMap { $0 }.max() ?? 0)
        var svg = start("line", width: width, height: height, label: label)
        let step = values.count > 1 ? Double(width - 4) / Double(values.count - 1) : 0
        var run: [String] = []
        func flush() {
            if run.count == 1 { run.append(run[0]) }
            if !run.isEmpty {
                svg.raw(
                    "<polyline fill=\"none\" stroke=\"#1565c0\" stroke-width=\"1.5\" points=\"\(run.joined(separator: " "))\"/>"
                )
            }
            run = []
        }
        for (index, value) in values.enumerated() {
            guard let value else {
                flush()
                continue
            }
            let x = 2 + Double(index) * step
            let y = Double(height - 3) - value / highest * Double(height - 6)
            run.append("\(Int(x.rounded())),\(Int(y.rounded()))")
        }
        flush()
        svg.raw("<text x=\"\(width - 4)\" y=\"11\" text-anchor=\"end\" font-size=\"10\" fill=\"#555\">max ")
        svg.text(highest >= 100 ? String(Int(highest.rounded())) : String(format: "%.2f", highest))
        svg.raw("</text></svg>")
        return svg.string
    }

    /// An `<svg>` of `width` × `height` with its accessible name and title `label`, on a light background.
    private static func start(_ kind: String, width: Int, height: Int, label: String) -> HTML {
        var svg = HTML()
        svg.raw(
            "<svg class=\"chart \(kind)\" xmlns=\"http://www.w3.org/2000/svg\" width=\"\(width)\" height=\"\(height)\""
        )
        svg.raw(" viewBox=\"0 0 \(width) \(height)\" role=\"img\"")
        svg.attribute("aria-label", label)
        svg.raw("><title>")
        svg.text(label)
        svg.raw("</title><rect x=\"0\" y=\"0\" width=\"\(width)\" height=\"\(height)\" fill=\"#fafafa\"/>")
        return svg
    }
}
