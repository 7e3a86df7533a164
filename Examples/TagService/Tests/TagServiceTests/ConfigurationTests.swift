import Foundation
import Testing

@testable import TagServiceCore

@Suite struct ConfigurationTests {
    func parse(_ arguments: [String], _ environment: [String: String] = [:]) throws -> TagServiceConfiguration {
        guard case .run(let configuration) = try TagServiceConfiguration.parse(arguments, environment: environment)
        else {
            Issue.record("expected a configuration")
            throw UsageError("help")
        }
        return configuration
    }

    @Test func flagsSetEveryOption() throws {
        let configuration = try parse([
            "--containers", "c", "--queue", "/var/q/", "--host", "0.0.0.0", "--port=9000", "--sessions", "s.json",
            "--no-durable-wait", "--max-body-bytes", "100", "--open", "GTM-A1", "--open", "GTM-B2",
            "--delivery-linger", "0.05", "--open-timeout", "7", "--concurrent-deliveries", "8",
            "--commit-delay", "0.001", "--max-batch-events", "50", "--max-batch-bytes=4096",
        ])
        #expect(configuration.maximumBatchEvents == 50)
        #expect(configuration.maximumBatchBytes == 4096)
        #expect(configuration.deliveryLinger == .milliseconds(50))
        #expect(configuration.concurrentDeliveries == 8)
        #expect(configuration.commitDelay == .milliseconds(1))
        #expect(configuration.openTimeout == .seconds(7))
        #expect(configuration.containersDirectory == "c")
        #expect(configuration.host == "0.0.0.0")
        #expect(configuration.port == 9000)
        #expect(configuration.sessionsDirectory == "s.json")
        #expect(configuration.waitsForDurability == false)
        #expect(configuration.maximumBodyBytes == 100)
        #expect(configuration.openIDs == ["GTM-A1", "GTM-B2"])
        #expect(configuration.recordsFile == "/var/q.jsonl")
        #expect(configuration.brazeEndpoint == nil)
    }

    @Test func environmentFillsWhatFlagsLeaveOut() throws {
        let configuration = try parse(
            ["--port", "1"],
            [
                "TAGSERVICE_CONTAINERS": "c", "TAGSERVICE_QUEUE": "q", "TAGSERVICE_PORT": "2",
                "BRAZE_REST_ENDPOINT": "https://rest.example.com", "BRAZE_REST_API_KEY": "k",
            ]
        )
        #expect(configuration.port == 1)
        #expect(configuration.queueDirectory == "q")
        #expect(configuration.brazeEndpoint?.absoluteString == "https://rest.example.com")
        #expect(configuration.brazeAPIKey == "k")
    }

    @Test(arguments: [
        (["--queue", "q"], "--containers"),
        (["--containers", "c"], "--queue"),
        (["--containers", "c", "--queue", "q", "--port", "70000"], "--port"),
        (["--containers", "c", "--queue", "q", "--open", "gtm-x"], "--open"),
        (["--containers", "c", "--queue", "q", "--bogus"], "--bogus"),
        (["--containers"], "--containers"),
        (["--containers", "c", "--queue", "q", "--session-idle", "1e300"], "--session-idle"),
        (["--containers", "c", "--queue", "q", "--commit-delay", "1e13"], "--commit-delay"),
        (["--containers", "c", "--queue", "q", "--max-batch-events", "0"], "--max-batch-events"),
        (["--containers", "c", "--queue", "q", "--max-batch-bytes", "-1"], "--max-batch-bytes"),
        (["--containers", "c", "--queue", "q", "--open-timeout", "1e300"], "--open-timeout"),
        (["--containers", "c", "--queue", "q", "--delivery-linger", "nan"], "--delivery-linger"),
        (["--containers", "c", "--queue", "q", "--request-timeout", "0"], "--request-timeout"),
        (["--containers", "c", "--queue", "q", "--shutdown-timeout", "-1"], "--shutdown-timeout"),
    ])
    func unusableCommandLinesNameTheFlag(_ arguments: [String], _ flag: String) throws {
        let error = #expect(throws: UsageError.self) { try TagServiceConfiguration.parse(arguments, environment: [:]) }
        #expect(error?.description.contains(flag) == true)
    }

    /// `--delivery-linger` and `--commit-delay` take 0 however it is written (`0`, `0.0`), and say so when refused.
    @Test(arguments: ["0", "0.0", "0e0", "-0"])
    func aZeroLingerOrCommitDelayIsTakenHoweverItIsWritten(_ zero: String) throws {
        let configuration = try parse([
            "--containers", "c", "--queue", "q", "--delivery-linger", zero, "--commit-delay", zero,
        ])
        #expect(configuration.deliveryLinger == .zero)
        #expect(configuration.commitDelay == .zero)
        let error = #expect(throws: UsageError.self) {
            try TagServiceConfiguration.parse(
                ["--containers", "c", "--queue", "q", "--delivery-linger", "-1"],
                environment: [:]
            )
        }
        #expect(error?.description.contains("must be 0 or a positive number of seconds") == true)
    }

    @Test func aYesOrNoVariableIsReadInAnyCaseAndAnythingElseIsRefused() throws {
        for (value, expected) in [
            ("1", true), ("TRUE", true), ("On", true), ("0", false), ("False", false), ("", false),
        ] {
            let configuration = try parse(
                ["--containers", "c", "--queue", "q"],
                ["TAGSERVICE_NO_DURABLE_WAIT": value]
            )
            #expect(configuration.waitsForDurability == !expected, "\(value)")
        }
        let error = #expect(throws: UsageError.self) {
            try TagServiceConfiguration.parse(
                ["--containers", "c", "--queue", "q"],
                environment: ["TAGSERVICE_NO_DURABLE_WAIT": "maybe"]
            )
        }
        #expect(error?.description.contains("TAGSERVICE_NO_DURABLE_WAIT") == true)
    }

    @Test func theLogLevelIsReadInAnyCaseAndAnythingElseIsRefusedNamingIt() throws {
        for (value, expected) in [("INFO", "info"), ("Debug", "debug"), ("warning", "warning")] {
            let configuration = try parse(["--containers", "c", "--queue", "q"], ["TAGSERVICE_LOG_LEVEL": value])
            #expect(configuration.logLevel == expected, "\(value)")
        }
        let error = #expect(throws: UsageError.self) {
            try TagServiceConfiguration.parse(
                ["--containers", "c", "--queue", "q", "--log-level", "verbose"],
                environment: [:]
            )
        }
        #expect(error?.description.contains("not 'verbose'") == true)
    }

    @Test func aBrazeEndpointIsCutBackToItsBaseAndOneThatCannotBeIsRefusedSayingWhy() throws {
        let pasted = try parse(
            ["--containers", "c", "--queue", "q"],
            ["BRAZE_REST_ENDPOINT": "https://rest.iad-01.braze.com/users/track/", "BRAZE_REST_API_KEY": "k"]
        )
        #expect(pasted.brazeEndpoint?.absoluteString == "https://rest.iad-01.braze.com")
        let error = #expect(throws: UsageError.self) {
            try TagServiceConfiguration.parse(
                ["--containers", "c", "--queue", "q"],
                environment: ["BRAZE_REST_ENDPOINT": "https://rest.iad-01.braze.com?x=1", "BRAZE_REST_API_KEY": "k"]
            )
        }
        #expect(error?.description.hasPrefix("BRAZE_REST_ENDPOINT: ") == true, "\(error?.description ?? "")")
        #expect(error?.description.contains("has a query or a fragment") == true)
    }

    @Test func variablesFromSecretsLoseTheLineBreakAroundThem() throws {
        let configuration = try parse(
            ["--containers", "c", "--queue", "q"],
            [
                "TAGSERVICE_METRICS_TOKEN": "metrics-0123456789\n", "TAGSERVICE_WRITE_KEYS": "key-0123456789abcdef\n",
                "TAGSERVICE_PORT": " 8081\n", "CONTAINERKIT_POSTGRES_URL": "postgres://tags@db.internal/tags\n",
                "TAGSERVICE_OPEN": "GTM-MUSIC01\n",
            ]
        )
        #expect(configuration.metricsToken == "metrics-0123456789")
        #expect(configuration.writeKeys == ["key-0123456789abcdef"])
        #expect(configuration.port == 8081)
        #expect(configuration.postgresURL == "postgres://tags@db.internal/tags")
        #expect(configuration.openIDs == ["GTM-MUSIC01"])
    }

    @Test func anEndpointWithoutAKeyIsRefused() {
        #expect(throws: UsageError.self) {
            try TagServiceConfiguration.parse(
                ["--containers", "c", "--queue", "q"],
                environment: ["BRAZE_REST_ENDPOINT": "https://rest.example.com"]
            )
        }
    }

    @Test func helpListsEveryFlagAndVariable() throws {
        guard case .help = try TagServiceConfiguration.parse(["--containers", "c", "--help"], environment: [:]) else {
            Issue.record("expected help")
            return
        }
        for word in [
            "--containers", "--queue", "--host", "--port", "--sessions", "--no-durable-wait", "BRAZE_REST_ENDPOINT",
            "BRAZE_REST_API_KEY", "TAGSERVICE_QUEUE", "--delivery-linger", "--open-timeout", "--open",
            "--container-url", "--concurrent-deliveries", "TAGSERVICE_CONCURRENT_DELIVERIES",
            "--commit-delay", "TAGSERVICE_COMMIT_DELAY", "--write-key", "TAGSERVICE_WRITE_KEYS", "--write-key-file",
            "TAGSERVICE_WRITE_KEY_FILE", "--metrics-token", "TAGSERVICE_METRICS_TOKEN", "--request-timeout",
            "TAGSERVICE_REQUEST_TIMEOUT", "--shutdown-timeout", "TAGSERVICE_SHUTDOWN_TIMEOUT", "--braze-user",
            "TAGSERVICE_BRAZE_USER", "--braze-pending-records", "--braze-pending-age", "--braze-objects-per-request",
            "TAGSERVICE_BRAZE_OBJECTS_PER_REQUEST",
        ] {
            #expect(TagServiceConfiguration.help.contains(word))
        }
    }

    @Test func theBrazeObjectLimitComesFromTheFlagOrTheVariableAndBrazesLimitsBoundIt() throws {
        #expect(try parse(["--containers", "c", "--queue", "q"]).brazeObjectLimit == .total(75))
        let flagged = try parse(["--containers", "c", "--queue", "q", "--braze-objects-per-request", "75-each"])
        #expect(flagged.brazeObjectLimit == .perCategory(75))
        let environment = ["TAGSERVICE_BRAZE_OBJECTS_PER_REQUEST": "50\n"]
        #expect(try parse(["--containers", "c", "--queue", "q"], environment).brazeObjectLimit == .total(50))
        for bad in ["0", "100", "75 each", "many"] {
            let error = #expect(throws: UsageError.self) {
                try parse(["--containers", "c", "--queue", "q", "--braze-objects-per-request", bad])
            }
            #expect(error?.description.contains("--braze-objects-per-request: '\(bad)' is not an object limit") == true)
        }
    }

    @Test func writeKeysComeFromTheFlagsOrTheVariablePlusTheFile() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("keys-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: file) }
        try "# rotated 2026-11\nfile-key-0123456789\n\n  other-file-key-0123456789  \n".write(
            to: file,
            atomically: true,
            encoding: .utf8
        )
        let environment = ["TAGSERVICE_WRITE_KEYS": "env-key-0123456789, env-key-abcdefghij"]
        let fromVariable = try parse(["--containers", "c", "--queue", "q"], environment)
        #expect(fromVariable.writeKeys == ["env-key-0123456789", "env-key-abcdefghij"])
        let flagged = try parse(
            ["--containers", "c", "--queue", "q", "--write-key", "flag-key-0123456789", "--write-key-file", file.path],
            environment
        )
        #expect(flagged.writeKeys == ["flag-key-0123456789", "file-key-0123456789", "other-file-key-0123456789"])
        #expect(try parse(["--containers", "c", "--queue", "q"]).writeKeys.isEmpty)
        let token = try parse(
            ["--containers", "c", "--queue", "q"],
            ["TAGSERVICE_METRICS_TOKEN": "metrics-0123456789"]
        )
        #expect(token.metricsToken == "metrics-0123456789")
    }

    @Test(arguments: ["short", "has space 0123456789", "has:colon-0123456789", "caf\u{E9}-0123456789abcdef"])
    func anUnusableWriteKeyIsRefusedWithoutBeingEchoed(_ key: String) {
        let error = #expect(throws: UsageError.self) {
            try TagServiceConfiguration.parse(
                ["--containers", "c", "--queue", "q", "--write-key", key],
                environment: [:]
            )
        }
        #expect(error?.description.contains("write key 1 of 1") == true)
        #expect(error?.description.contains(key) == false)
    }

    @Test func aWriteKeyFileFromWindowsIsReadAndABadLineIsNamedWithoutItsKey() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("keys-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: file) }
        // Notepad: a byte order mark and CRLF line ends.
        try Data("\u{FEFF}first-key-0123456789\r\n# old\r\nsecond-key-0123456789\r\n".utf8).write(to: file)
        let read = try parse(["--containers", "c", "--queue", "q", "--write-key-file", file.path])
        #expect(read.writeKeys == ["first-key-0123456789", "second-key-0123456789"])
        try Data("good-key-0123456789\n\n# a comment\nbad key 0123456789\n".utf8).write(to: file)
        let error = #expect(throws: UsageError.self) {
            try TagServiceConfiguration.parse(
                ["--containers", "c", "--queue", "q", "--write-key-file", file.path],
                environment: [:]
            )
        }
        #expect(error?.description.hasPrefix("--write-key-file '\(file.path)' line 4: the key is not usable") == true)
        #expect(error?.description.contains("bad key") == false)
    }

    @Test func theRequestAndShutdownBoundsHaveDefaultsFlagsAndVariables() throws {
        let defaults = try parse(["--containers", "c", "--queue", "q"])
        #expect(defaults.requestTimeout == .seconds(30))
        #expect(defaults.shutdownTimeout == .seconds(15))
        let set = try parse(
            ["--containers", "c", "--queue", "q", "--request-timeout", "2.5"],
            ["TAGSERVICE_REQUEST_TIMEOUT": "9", "TAGSERVICE_SHUTDOWN_TIMEOUT": "4"]
        )
        #expect(set.requestTimeout == .milliseconds(2500))
        #expect(set.shutdownTimeout == .seconds(4))
    }
}
