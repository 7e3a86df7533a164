/// Further benchmark sections print their figures here, before the final ratio lines.
enum BenchExtensions {
    static func runAll() async {
        await LintBench.run()
        await BrazeBench.run()
        await SessionBench.run()
        await SessionLogBench.run()
        await DiffBench.run()
    }
}
