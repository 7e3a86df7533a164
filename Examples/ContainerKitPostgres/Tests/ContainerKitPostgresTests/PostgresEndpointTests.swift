import ContainerKitPostgres
import Testing

/// `PostgresEndpoint(url:)`: the URL forms libpq takes, and a clear refusal, never a silent default, for what
/// these connections cannot do.
struct PostgresEndpointTests {
    @Test func aURLGivesItsPartsWithLibpqsDefaults() throws {
        let full = try PostgresEndpoint(url: "postgresql://tags:p%40ss@db.internal:6432/events?sslmode=disable")
        #expect(full.host == "db.internal" && full.port == 6432 && full.user == "tags" && full.database == "events")
        #expect(full.password == "p@ss")
        #expect(full.description == "postgres://tags@db.internal:6432/events")
        let bare = try PostgresEndpoint(url: "postgres://127.0.0.1")
        #expect(bare.port == 5432 && bare.user == "postgres" && bare.database == "postgres")
        for mode in ["allow", "prefer"] {
            #expect(try PostgresEndpoint(url: "postgres://u@127.0.0.1/db?sslmode=\(mode)").database == "db")
        }
    }

    @Test(arguments: ["require", "verify-ca", "verify-full"])
    func aURLThatAsksForTLSIsRefusedNotConnectedInTheClear(mode: String) {
        let error = #expect(throws: PostgresStoreError.self) {
            try PostgresEndpoint(url: "postgres://u:secret@db.example.com/db?sslmode=\(mode)")
        }
        #expect(error?.code == .invalidConfiguration)
        #expect(error?.message.contains("sslmode=\(mode) asks for TLS") == true, "\(error?.message ?? "")")
        #expect(error?.message.contains("secret") == false)
    }

    @Test func anUnknownParameterABadSSLModeOrAPortOutOfRangeIsRefusedSayingWhich() {
        for (url, words) in [
            ("postgres://u@127.0.0.1/db?application_name=x", "parameter 'application_name' is not supported"),
            (
                "postgres://u@127.0.0.1/db?sslmode=on",
                "sslmode must be disable, allow, prefer, require, verify-ca or verify-full, not 'on'"
            ),
            ("postgres://u@127.0.0.1:99999/db", "the port must be 1–65535, not 99999"),
            ("postgres://u@127.0.0.1:0/db", "the port must be 1–65535, not 0"),
            ("mysql://u@127.0.0.1/db", "is not a postgres://user@host:port/database url"),
        ] {
            let error = #expect(throws: PostgresStoreError.self, "\(url)") { try PostgresEndpoint(url: url) }
            #expect(error?.message.contains(words) == true, "\(url): \(error?.message ?? "")")
        }
    }
}
