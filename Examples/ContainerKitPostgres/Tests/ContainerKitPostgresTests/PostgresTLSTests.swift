import ContainerKit
import ContainerKitDelivery
import Foundation
import PostgresNIO
import PostgresTestHarness
import Testing

@testable import ContainerKitPostgres

/// `sslmode` and `sslrootcert` against a real PostgreSQL with TLS on (a throw-away certificate authority): what
/// libpq's modes promise holds — the store's connections are encrypted when asked, a server that does not offer TLS
/// or a certificate that does not chain to the given roots gets no connection, and `prefer` goes in the clear only
/// where the server offers nothing else.
@Suite(.serialized)
struct PostgresTLSTests {
    /// Whether the connection a one-off query uses is encrypted, by the server's own account.
    static func encrypted(_ endpoint: PostgresEndpoint) async throws -> Bool {
        try await query(endpoint, "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()", as: Bool.self) == [true]
    }

    @Test func verifyFullWithTheServersAuthorityEncryptsTheStoresConnectionsAndCommits() async throws {
        let cluster = try await PostgresTestCluster.start()
        defer { cluster.remove() }
        let authority = try await cluster.enableTLS()
        let url = try await cluster.createDatabase() + "?sslmode=verify-full&sslrootcert=\(authority)"
        let endpoint = try PostgresEndpoint(url: url)
        #expect(endpoint.tls == .verifyFull && endpoint.rootCertificatePath == authority)
        #expect(try await Self.encrypted(endpoint))
        let instance = Instance(endpoint) { $0.delivers = false }
        try await withRunning([instance.run]) {
            try await instance.commit((0..<10).map { makeRecord(user: "u\($0)") })
            // Every connection the store opened (its pool and its lease connection) is encrypted.
            let clear = try await query(
                endpoint,
                """
                SELECT count(*) FROM pg_stat_activity a JOIN pg_stat_ssl s USING (pid)
                WHERE a.application_name LIKE 'containerkit%' AND NOT s.ssl
                """,
                as: Int64.self
            )
            #expect(clear == [0])
        }
        #expect(try await query(endpoint, "SELECT count(*) FROM ck_records", as: Int64.self) == [10])
        // libpq's default, prefer, takes the TLS the server offers.
        var preferred = endpoint
        preferred.tls = .prefer
        preferred.rootCertificatePath = nil
        #expect(try await Self.encrypted(preferred))
    }

    @Test func aCertificateThatDoesNotChainToTheTrustedRootsGetsNoConnection() async throws {
        let cluster = try await PostgresTestCluster.start()
        defer { cluster.remove() }
        _ = try await cluster.enableTLS()
        let url = try await cluster.createDatabase()
        // The system's roots do not hold the test authority.
        for mode in ["verify-full", "verify-ca"] {
            let endpoint = try PostgresEndpoint(url: url + "?sslmode=\(mode)")
            let error = await #expect(throws: (any Error).self, "\(mode)") { try await Self.encrypted(endpoint) }
            // The store's own calls say why, where they said "the connection to postgresql was lost".
            let classified = PostgresStoreError.classify(
                try #require(error),
                operation: "the commit",
                role: "tags",
                timeout: .seconds(5)
            )
            #expect(classified.code == .unavailable)
            #expect(classified.message.hasPrefix("the TLS handshake with postgresql failed"), "\(classified)")
        }
        // require checks nothing: it is encrypted all the same.
        #expect(try await Self.encrypted(try PostgresEndpoint(url: url + "?sslmode=require")))
    }

    @Test func aServerWithoutTLSGetsNoConnectionWhenTLSIsRequiredAndOneInTheClearWhenPreferred() async throws {
        let endpoint = try await SharedCluster.freshDatabase()
        #expect(endpoint.tls == .prefer)
        #expect(try await Self.encrypted(endpoint) == false)
        var required = endpoint
        required.tls = .require
        let error = await #expect(throws: (any Error).self) { try await Self.encrypted(required) }
        let classified = PostgresStoreError.classify(
            try #require(error),
            operation: "the commit",
            role: "tags",
            timeout: .seconds(5)
        )
        #expect(classified.message.hasPrefix("postgresql does not offer TLS"), "\(classified)")
    }
}
