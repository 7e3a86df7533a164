import Foundation
import Logging
import Testing

@testable import TagServiceCore

@Suite struct PostgresConfigurationTests {
    private func parse(_ arguments: [String], _ environment: [String: String] = [:]) throws -> TagServiceConfiguration {
        guard case .run(let configuration) = try TagServiceConfiguration.parse(arguments, environment: environment)
        else { throw UsageError("expected a configuration") }
        return configuration
    }

    @Test func postgresFlagsSwitchRecordsAndSessionsToPostgres() throws {
        let configuration = try parse([
            "--containers", "c", "--queue", "q", "--postgres", "postgres://tags@db.internal:5433/tags",
            "--instance-name", "tags-2",
            "--postgres-partitions", "32", "--braze-requests-per-second", "250",
        ])
        #expect(configuration.postgresURL == "postgres://tags@db.internal:5433/tags")
        #expect(configuration.instanceName == "tags-2")
        #expect(configuration.postgresPartitions == 32)
        #expect(configuration.brazeRequestsPerSecond == 250)
        // Without the flag the embedded default stays: no PostgreSQL.
        #expect(try parse(["--containers", "c", "--queue", "q"]).postgresURL == nil)
    }

    @Test func theEnvironmentVariableSwitchesToPostgresAndTheFlagWins() throws {
        let environment = [
            "CONTAINERKIT_POSTGRES_URL": "postgres://env@127.0.0.1/tags", "TAGSERVICE_INSTANCE_NAME": "from-env",
            "TAGSERVICE_POSTGRES_PARTITIONS": "8",
        ]
        let fromEnvironment = try parse(["--containers", "c", "--queue", "q"], environment)
        #expect(fromEnvironment.postgresURL == "postgres://env@127.0.0.1/tags")
        #expect(fromEnvironment.instanceName == "from-env")
        #expect(fromEnvironment.postgresPartitions == 8)
        let flagged = try parse(
            ["--containers", "c", "--queue", "q", "--postgres", "postgres://flag@127.0.0.1/tags"],
            environment
        )
        #expect(flagged.postgresURL == "postgres://flag@127.0.0.1/tags")
    }

    /// `--commit-delay` keeps its meaning under `--postgres`; only its default is PostgreSQL's (20 ms, not the
    /// file queue's 1 ms), and the store gets what was asked for.
    @Test func withPostgresTheCommitDelayDefaultsTo20MillisecondsAndTheFlagWins() throws {
        let base = ["--containers", "c", "--queue", "q", "--postgres", "postgres://tags@127.0.0.1/tags"]
        #expect(try parse(base).commitDelay == .milliseconds(20))
        #expect(try parse(["--containers", "c", "--queue", "q"]).commitDelay == .milliseconds(1))
        let flagged = try parse(base + ["--commit-delay", "0.002"])
        #expect(flagged.commitDelay == .milliseconds(2))
        #expect(try parse(base, ["TAGSERVICE_COMMIT_DELAY": "0"]).commitDelay == .zero)
        let store = try #require(try PostgresScaleOut.store(flagged, logger: .init(label: "test")))
        #expect(store.configuration.commitDelay == .milliseconds(2))
        #expect(store.configuration.gatherTick == .microseconds(500))
    }

    /// `--postgres-timeout` (`TAGSERVICE_POSTGRES_TIMEOUT`): every PostgreSQL call's deadline, 5 s by default.
    @Test func thePostgresTimeoutIsTheStoresCallDeadline() throws {
        let base = ["--containers", "c", "--queue", "q", "--postgres", "postgres://tags@127.0.0.1/tags"]
        #expect(try parse(base).postgresCallTimeout == .seconds(5))
        #expect(try parse(base + ["--postgres-timeout", "1.5"]).postgresCallTimeout == .milliseconds(1500))
        let environment = ["TAGSERVICE_POSTGRES_TIMEOUT": "2"]
        #expect(try parse(base, environment).postgresCallTimeout == .seconds(2))
        #expect(try parse(base + ["--postgres-timeout=3"], environment).postgresCallTimeout == .seconds(3))
        let store = try #require(
            try PostgresScaleOut.store(try parse(base + ["--postgres-timeout", "0.5"]), logger: .init(label: "test"))
        )
        #expect(store.configuration.callTimeout == .milliseconds(500))
    }

    @Test(arguments: [
        ["--postgres-timeout", "0"], ["--postgres-timeout", "-1"], ["--postgres-timeout", "soon"],
        ["--postgres-timeout", "0.001"], ["--postgres-timeout", "7200"],
        ["--postgres", "mysql://db/tags"], ["--postgres", "not a url"], ["--postgres-partitions", "0"],
        ["--postgres-partitions", "many"], ["--braze-requests-per-second", "-1"],
    ])
    func invalidPostgresFlagsAreUsageErrors(_ flags: [String]) throws {
        #expect(throws: UsageError.self) { try parse(["--containers", "c", "--queue", "q"] + flags) }
    }
}
