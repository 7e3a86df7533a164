import ContainerKitPostgres
import Foundation
import PostgresTestHarness
import Testing

/// `PostgresEndpoint(url:)`: the URL forms libpq takes, and a clear refusal, never a silent default, for what
/// these connections cannot do.
struct PostgresEndpointTests {
    @Test func aURLGivesItsPartsWithLibpqsDefaults() throws {
        let full = try PostgresEndpoint(url: "postgresql://tags:p%40ss@db.internal:6432/events?sslmode=disable")
        #expect(full.host == "db.internal" && full.port == 6432 && full.user == "tags" && full.database == "events")
        #expect(full.password == "p@ss" && full.tls == .disable)
        #expect(full.description == "postgres://tags@db.internal:6432/events?sslmode=disable")
        let bare = try PostgresEndpoint(url: "postgres://127.0.0.1\n")
        #expect(bare.port == 5432 && bare.user == "postgres" && bare.database == "postgres")
        #expect(bare.tls == .prefer && bare.rootCertificatePath == nil)
        #expect(bare.description == "postgres://postgres@127.0.0.1:5432/postgres")
        for mode in PostgresEndpoint.TLSMode.allCases {
            #expect(try PostgresEndpoint(url: "postgres://u@127.0.0.1/db?sslmode=\(mode.rawValue)").tls == mode)
        }
        let system = try PostgresEndpoint(url: "postgres://u@127.0.0.1/db?sslmode=verify-full&sslrootcert=system")
        #expect(system.tls == .verifyFull && system.rootCertificatePath == nil)
    }

    @Test func aRootCertificateFileIsTakenWhenItHoldsACertificate() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("root-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let root = try await TestCertificates.makeAuthority(in: directory)
        let endpoint = try PostgresEndpoint(url: "postgres://u@127.0.0.1/db?sslmode=verify-ca&sslrootcert=\(root)")
        #expect(endpoint.rootCertificatePath == root)
        // Only its start: no certificate in it.
        let cut = directory + "/cut.pem"
        try Data("-----BEGIN CERTIFICATE-----\n".utf8).write(to: URL(fileURLWithPath: cut))
        let error = #expect(throws: PostgresStoreError.self) {
            try PostgresEndpoint(url: "postgres://u@127.0.0.1/db?sslmode=verify-ca&sslrootcert=\(cut)")
        }
        #expect(error?.message.contains("sslrootcert '\(cut)' holds no pem certificate") == true)
    }

    @Test func anUnknownParameterABadModeAMissingRootFileOrAPortOutOfRangeIsRefusedSayingWhich() {
        for (url, words) in [
            ("postgres://u@127.0.0.1/db?application_name=x", "parameter 'application_name' is not supported"),
            ("postgres://u@127.0.0.1/db?sslcrl=x", "parameter 'sslcrl' is not supported"),
            (
                "postgres://u@127.0.0.1/db?sslmode=on",
                "sslmode must be one of disable, allow, prefer, require, verify-ca, verify-full, not 'on'"
            ),
            (
                "postgres://u@127.0.0.1/db?sslrootcert=/nonexistent/root.pem",
                "sslrootcert '/nonexistent/root.pem' is not a file that can be read"
            ),
            ("postgres://u:secret@127.0.0.1:99999/db", "the port must be 1–65535, not 99999"),
            ("postgres://u@127.0.0.1:0/db", "the port must be 1–65535, not 0"),
            ("mysql://u@127.0.0.1/db", "is not a postgres://user@host:port/database url"),
        ] {
            let error = #expect(throws: PostgresStoreError.self, "\(url)") { try PostgresEndpoint(url: url) }
            #expect(error?.code == .invalidConfiguration)
            #expect(error?.message.contains(words) == true, "\(url): \(error?.message ?? "")")
            #expect(error?.message.contains("secret") == false)
        }
    }
}
