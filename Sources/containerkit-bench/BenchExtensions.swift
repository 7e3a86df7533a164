/// Further benchmark sections (durable queue, end to end, lint) print their figures here, before the
/// final ratio lines.
enum BenchExtensions {
    static func runAll() async {}
}
