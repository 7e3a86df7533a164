import ContainerKitPostgres

extension TagServiceConfiguration {
    /// Reads the `--postgres` flags (see ``postgresURL``).
    static func parseScaleOut(_ values: [String: String], into configuration: inout TagServiceConfiguration)
        throws(UsageError)
    {
        if let url = values["--postgres"] {
            do {
                _ = try PostgresEndpoint(url: url)
            } catch {
                throw UsageError("--postgres: \(error.message)")
            }
            configuration.postgresURL = url
            // Without --commit-delay (whose default is the file queue's), PostgreSQL mode gathers a busy writer's
            // next group for its own default: a commit there is a network round trip and a WAL flush, and the
            // writer waits only when appends arrived during its commit (a lone request never waits).
            if values["--commit-delay"] == nil {
                configuration.commitDelay = PostgresRecordStore.Configuration.defaultCommitDelay
            }
        }
        if let name = values["--instance-name"] { configuration.instanceName = name }
        if let count = values["--postgres-partitions"] {
            let number = try integer(count, flag: "--postgres-partitions", in: 1...1024)
            configuration.postgresPartitions = number
        }
        if let seconds = values["--postgres-timeout"] {
            let timeout = try duration(seconds, flag: "--postgres-timeout")
            guard timeout >= .milliseconds(10), timeout <= .seconds(3600) else {
                throw UsageError("--postgres-timeout must be from 0.01 to 3600 seconds, not '\(seconds)'")
            }
            configuration.postgresCallTimeout = timeout
        }
        if let rate = values["--braze-requests-per-second"] {
            guard let number = Double(rate), number > 0, number <= 1e6 else {
                throw UsageError("--braze-requests-per-second must be a positive number, not '\(rate)'")
            }
            configuration.brazeRequestsPerSecond = number
        }
    }
}
