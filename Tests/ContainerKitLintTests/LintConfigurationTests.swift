import Foundation
import Testing

@testable import ContainerKit
@testable import ContainerKitLint

struct LintConfigurationTests {
    private static func temporaryDirectory() throws -> String {
        let path = NSTemporaryDirectory() + "containerkit-lint-config-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// A configuration file's bytes are read as they are: before, they were decoded to text first, so a UTF-16
    /// file was "binary data" and a byte that is not UTF-8 became U+FFFD without a word.
    @Test func aFileInUTF16OrWithABadByteIsToldSoAtItsPlace() throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let wide = directory + "/wide.json"
        try Data([0xFF, 0xFE] + Array(#"{"rules": {}}"#.utf8).flatMap { [$0, 0] }).write(to: URL(fileURLWithPath: wide))
        let wideError = #expect(throws: ContainerError.self) { try LintConfiguration.load(path: wide) }
        #expect(wideError?.message.hasPrefix("configuration: file is utf-16 or utf-32 encoded") == true)
        let latin1 = directory + "/latin1.json"
        try Data(Array(#"{"rules": {"caf"#.utf8) + [0xE9] + Array(#"": "off"}}"#.utf8)).write(
            to: URL(fileURLWithPath: latin1)
        )
        let byteError = #expect(throws: ContainerError.self) { try LintConfiguration.load(path: latin1) }
        #expect(byteError?.message == "configuration: invalid utf-8 byte 0xe9 in string")
        #expect(byteError?.location?.description == "1:16")
    }

    @Test func readsEveryKey() throws {
        let configuration = try LintConfiguration(
            json: #"""
                {"disabled_rules": ["unused_variable"], "opt_in_rules": ["paused_tag"],
                 "severity": {"empty_container": "error"}, "braze_class_paths": ["X"],
                 "excluded": ["old/**"], "max_file_size": 1000, "report_unused_constants": true}
                """#
        )
        #expect(configuration.disabledRules == ["unused_variable"])
        #expect(configuration.optInRules == ["paused_tag"])
        #expect(configuration.severities == ["empty_container": .error])
        #expect(configuration.brazeClassPaths == ["X"])
        #expect(configuration.excluded == ["old/**"])
        #expect(configuration.maximumFileSize == 1000)
        #expect(configuration.reportUnusedConstants)
        #expect(configuration.warnings.isEmpty)
    }

    @Test func unknownKeysAndRulesAreWarningsThatSayWhere() throws {
        let configuration = try LintConfiguration(
            json: #"""
                {"disabled_rules": ["no_such_rule"],
                  "colour": "red",
                  "severity": {"also_no_rule": "note"}}
                """#
        )
        #expect(
            configuration.warnings.map(\.description).sorted() == [
                "1:21: unknown rule 'no_such_rule' in 'disabled_rules'",
                "2:3: unknown configuration key 'colour'",
                "3:16: unknown rule 'also_no_rule' in 'severity'",
            ]
        )
        #expect(
            configuration.warnings.map(\.pointer).sorted() == [
                "/colour", "/disabled_rules/0", "/severity/also_no_rule",
            ]
        )
    }

    @Test(arguments: [
        (#"[]"#, "1:1", "", "configuration must be a json object, not array"),
        ("<plist><dict/></plist>", "1:8", "", "configuration must be json, not a property list"),
        (
            #"{"disabled_rules": "unused_variable"}"#, "1:20", "/disabled_rules",
            "'disabled_rules' must be an array of strings, not string"
        ),
        (
            #"{"severity": {"empty_container": "fatal"}}"#, "1:34", "/severity/empty_container",
            #"severity of 'empty_container' must be "error", "warning" or "note", not 'fatal'"#
        ),
        (#"{"max_file_size": -1}"#, "1:19", "/max_file_size", "'max_file_size' must be a positive integer, not -1"),
        (
            "{\n  \"excluded\": [\"a\", 1]\n}", "2:21", "/excluded/1",
            "'excluded' must be an array of strings; element 1 is number"
        ),
        (
            #"{"report_unused_constants": "yes"}"#, "1:29", "/report_unused_constants",
            "'report_unused_constants' must be a boolean, not string"
        ),
        ("{", "1:2", "", "configuration: unexpected end of file inside object that starts at column 1"),
    ])
    func anInvalidConfigurationIsAnErrorThatSaysWhatAndWhere(
        text: String,
        location: String,
        pointer: String,
        message: String
    ) throws {
        let error = try #require(throws: ContainerError.self) { try LintConfiguration(json: text, path: "cfg.json") }
        #expect(error.file == "cfg.json")
        #expect(error.location?.description == location)
        #expect(error.pointer == pointer)
        #expect(error.message == message)
    }

    @Test func onlyRulesWinsOverTheOtherLists() throws {
        let configuration = try LintConfiguration(
            json: #"{"only_rules": ["paused_tag"], "disabled_rules": ["paused_tag"]}"#
        )
        #expect(Linter(configuration: configuration).ruleIDs == ["paused_tag"])
    }

    @Test func discoveryWalksUpAndTheNearestFileWins() throws {
        let root = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        try FileManager.default.createDirectory(atPath: root + "/a/b/c", withIntermediateDirectories: true)
        try #"{"disabled_rules": ["empty_container"]}"#.write(
            toFile: root + "/a/.containerkit-lint.json",
            atomically: true,
            encoding: .utf8
        )
        try #"{"opt_in_rules": ["paused_tag"]}"#.write(
            toFile: root + "/a/b/c/.containerkit-lint.json",
            atomically: true,
            encoding: .utf8
        )
        let resolver = LintConfigurationResolver()
        let middle = try resolver.configuration(for: root + "/a/b/GTM-X.json")
        #expect(middle.disabledRules == ["empty_container"])
        #expect(middle.baseDirectory == LintPaths.absolute(root + "/a"))
        let deep = try resolver.configuration(for: root + "/a/b/c/GTM-X.json")
        #expect(deep.optInRules == ["paused_tag"])
        #expect(deep.disabledRules.isEmpty)
    }

    @Test func excludedPatternsAreRelativeToTheConfigurationFile() throws {
        var configuration = try LintConfiguration(json: #"{"excluded": ["legacy", "**/*.plist", "tmp/GTM-?.json"]}"#)
        configuration.baseDirectory = "/repo"
        #expect(configuration.isExcluded("/repo/legacy/GTM-A.json"))
        #expect(configuration.isExcluded("/repo/x/y/GTM-A.plist"))
        #expect(configuration.isExcluded("/repo/tmp/GTM-A.json"))
        #expect(!configuration.isExcluded("/repo/tmp/GTM-AB.json"))
        #expect(!configuration.isExcluded("/repo/Containers/GTM-A.json"))
    }

    @Test(arguments: [
        ("*.json", "a.json", true), ("*.json", "d/a.json", false), ("**/*.json", "a.json", true),
        ("**/*.json", "d/e/a.json", true), ("d/**", "d/e/a.json", true), ("d/*", "d/e/a.json", false),
        ("GTM-????", "GTM-ABCD", true), ("GTM-????", "GTM-ABC", false), ("a**b", "a/x/b", true),
    ])
    func globsMatchLikeShells(pattern: String, path: String, matches: Bool) {
        #expect(GlobPattern(pattern).matches(path) == matches)
    }

    @Test func directoryWalksFindContainerFilesInOrderAndSkipExcludedOnes() throws {
        let root = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let manager = FileManager.default
        try manager.createDirectory(atPath: root + "/b/.hidden", withIntermediateDirectories: true)
        try manager.createDirectory(atPath: root + "/a/skip", withIntermediateDirectories: true)
        for file in [
            "b/GTM-B.json", "a/GTM-A.plist", "a/GTM-LEGACY", "a/gtm_raw", "a/notes.txt", "a/app.js", "b/gtm.js",
            "a/skip/GTM-S.json", "b/.hidden/GTM-H.json", "b/README",
        ] {
            try "{}".write(toFile: root + "/" + file, atomically: true, encoding: .utf8)
        }
        try #"{"excluded": ["a/skip"]}"#.write(
            toFile: root + "/.containerkit-lint.json",
            atomically: true,
            encoding: .utf8
        )
        let resolver = LintConfigurationResolver()
        let files = try LintPaths.collect([root, root + "/a/app.js"]) { file throws(ContainerError) in
            try resolver.configuration(for: file)
        }
        #expect(
            files.map { String($0.dropFirst(root.count + 1)) } == [
                "a/GTM-A.plist", "a/GTM-LEGACY", "a/gtm_raw", "b/GTM-B.json", "b/gtm.js", "a/app.js",
            ]
        )
    }
}
