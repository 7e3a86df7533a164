import ContainerKit
import ContainerKitLint
import Foundation

/// `lint_corpus_ms`: linting every corpus file (all formats, 26 files) in one process, median of runs.
enum LintBench {
    static func run() async {
        let root = "../shared/research/corpus"
        guard let kinds = try? FileManager.default.contentsOfDirectory(atPath: root) else {
            print("notice: corpus not found at \(root); lint benchmark skipped")
            return
        }
        let files = kinds.sorted().flatMap { kind in
            ((try? FileManager.default.contentsOfDirectory(atPath: "\(root)/\(kind)")) ?? [])
                .filter { !$0.hasSuffix(".md") }.sorted().map { "\(root)/\(kind)/\($0)" }
        }
        let linter = Linter()
        var findings = 0
        let ms = await Harness.milliseconds(samples: 9) {
            findings = 0
            for file in files { findings += (try? linter.lint(path: file).count) ?? 0 }
        }
        print("lint_corpus_files=\(files.count) lint_corpus_findings=\(findings)")
        print("lint_corpus_ms=\(String(format: "%.1f", ms))")
    }
}
