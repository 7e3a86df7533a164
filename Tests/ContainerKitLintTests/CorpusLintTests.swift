import ContainerKitBrazeLint
import Foundation
import Testing

@testable import ContainerKit
@testable import ContainerKitLint

/// Lints the 26 real container files of the shared research corpus (`../shared/research/corpus`).
struct CorpusLintTests {
    static let corpus: String = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("../shared/research/corpus").standardizedFileURL.path

    static let corpusExists = FileManager.default.fileExists(atPath: corpus + "/README.md")

    /// Every corpus file, given explicitly (the walk would skip `.binary` and `.json.js` names).
    static func corpusFiles() -> [String] {
        let kinds = (try? FileManager.default.contentsOfDirectory(atPath: corpus)) ?? []
        var files: [String] = []
        for kind in kinds.sorted() where !kind.hasSuffix(".md") {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: corpus + "/" + kind)) ?? []
            files += names.sorted().map { corpus + "/" + kind + "/" + $0 }
        }
        return files
    }

    private func lint(_ relativePath: String) throws -> [LintFinding] {
        try Linter(catalog: Linter.allRules).lint(path: Self.corpus + "/" + relativePath)
    }

    @Test(.enabled(if: corpusExists, "corpus not found at ../shared/research/corpus"))
    func everyCorpusFileLintsWithoutAToolFailure() throws {
        let files = Self.corpusFiles()
        #expect(files.count == 26)
        for file in files {
            let findings = try Linter(catalog: Linter.allRules).lint(path: file)
            #expect(findings.allSatisfy { $0.file == file && !$0.message.isEmpty })
        }
    }

    @Test(.enabled(if: corpusExists, "corpus not found at ../shared/research/corpus"))
    func legacyBinariesAreExplained() throws {
        let binaries = Self.corpusFiles().filter { $0.hasSuffix(".binary") }
        #expect(binaries.count == 7)
        for file in binaries {
            let findings = try Linter(catalog: Linter.allRules).lint(path: file)
            #expect(findings.map(\.ruleID) == ["legacy_binary"], "\(file): \(findings)")
        }
    }

    @Test(.enabled(if: corpusExists, "corpus not found at ../shared/research/corpus"))
    func theBrazeSamplePassesTheBrazeChecks() throws {
        let findings = try lint("v5-mobile/Appboy__appboy-android-sdk__GTM-5HM9ZRX.json")
        #expect(!findings.contains { $0.ruleID.hasPrefix("braze_") })
        #expect(!findings.contains { $0.severity == .error })
        // Its two `path.to.Braze` tags are not Braze tags until configured as such; then they lack actionType.
        var configuration = LintConfiguration()
        configuration.brazeClassPaths.append("path.to.Braze")
        let configured = try Linter(configuration: configuration, catalog: Linter.allRules)
            .lint(path: Self.corpus + "/v5-mobile/Appboy__appboy-android-sdk__GTM-5HM9ZRX.json")
        #expect(
            configured.filter { $0.ruleID == "braze_action" }.map(\.message) == [
                "braze tag tag_id 16 ('__funct') has no 'actionType' argument",
                "braze tag tag_id 17 ('__funct') has no 'actionType' argument",
            ]
        )
    }

    @Test(.enabled(if: corpusExists, "corpus not found at ../shared/research/corpus"))
    func webGtmJsExtractsWarnAboutUnsupportedTemplates() throws {
        let findings = try lint("resource/wubinyanjiao__yii2Cloud__gtm.js.data.json")
        let unsupported = findings.filter { $0.ruleID == "unsupported_template" }.map(\.message)
        #expect(unsupported.contains("tag type '__cl' is not supported (94 times)"))
        #expect(unsupported.contains { $0.hasPrefix("browser-only variable type '__jsm'") })
        #expect(findings.allSatisfy { $0.severity == .warning })
        // gtm.js extracts carry no container ID, in their name or content.
        #expect(findings.contains { $0.ruleID == "file_name_container_id" })
    }

    @Test(.enabled(if: corpusExists, "corpus not found at ../shared/research/corpus"))
    func handCheckedFindings() throws {
        // The web export has one trigger ("window loaded") that nothing uses.
        let web = try lint("export-web/jmacario-gmu__gmuj-mason-standard-gtm-container__GTM-MBFRM8W_workspace27.json")
        #expect(
            web.filter { $0.ruleID == "unused_trigger" }.map(\.message) == [
                "trigger 'window loaded' fires no tag, blocks none and is referenced by nothing"
            ]
        )
        #expect(!web.contains { $0.ruleID == "dangling_reference" })
        // The adswerve export defines five Function Call variables that nothing reads; its constants are skipped.
        let adswerve = try lint(
            "export-mobile/adswerve__GTM-Function-Call-Analytics-Variable-Provider__GTM-iOS_Examples.json"
        )
        #expect(adswerve.map(\.ruleID) == Array(repeating: "unused_variable", count: 5))
        // The flat legacy JSON container is clean.
        #expect(try lint("v3-default/DieProduktMacher__TagmanagerMobileDemonstration__GTM-PLWRDX.json").isEmpty)
        // The Cargo iOS container: two Function Call tags fired on applicationStart, nothing to report.
        #expect(try lint("v5-mobile/fifty-five__Cargo-ios__GTM-TSCXGGQ.json").isEmpty)
        // The flutter export: Firebase/Ads/UA tags on the built-in "All Events" trigger (2147479556, compiled
        // now) and a user-property variable whose key comes from another variable — all loadable, the
        // templates reported as unsupported.
        let flutter = try lint("export-mobile/googleads__googleads-mobile-flutter__GTM-WDF9SGJ_v6.json.js")
        #expect(flutter.map(\.ruleID) == Array(repeating: "unsupported_template", count: 4))
        #expect(!flutter.contains { $0.message.contains("2147479556") })
    }
}
