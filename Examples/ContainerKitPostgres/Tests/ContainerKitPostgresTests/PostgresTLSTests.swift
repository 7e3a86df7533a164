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

    /// What the store's own calls say (``PostgresStoreError/classify(_:operation:role:timeout:)``) of a connection
    /// to `endpoint` that must fail.
    static func refusal(
        _ endpoint: PostgresEndpoint,
        role: String = "tags",
        sourceLocation: Testing.SourceLocation = #_sourceLocation
    ) async throws -> PostgresStoreError {
        let error = await #expect(throws: (any Error).self, sourceLocation: sourceLocation) {
            try await encrypted(endpoint)
        }
        return PostgresStoreError.classify(
            try #require(error, sourceLocation: sourceLocation),
            operation: "the commit",
            role: role,
            timeout: .seconds(5)
        )
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
            // The store's own calls say why, where they said "the connection to postgresql was lost".
            let classified = try await Self.refusal(try PostgresEndpoint(url: url + "?sslmode=\(mode)"))
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
        let classified = try await Self.refusal(required)
        #expect(classified.message.hasPrefix("postgresql does not offer TLS"), "\(classified)")
    }

    /// A server whose `pg_hba.conf` asks the store's role for a client certificate (`cert`) lets it in with
    /// `sslcert` and `sslkey`, and says what it asked for without them.
    @Test func aClientCertificateLogsTheStoreInWhereTheServerAsksForOne() async throws {
        let cluster = try await PostgresTestCluster.start()
        defer { cluster.remove() }
        let authority = try await cluster.enableTLS()
        let client = try await cluster.requireClientCertificate(role: "tagservice")
        let database = try #require(try await cluster.createDatabase().split(separator: "/").last)
        let base =
            "postgres://tagservice@127.0.0.1:\(cluster.port)/\(database)?sslmode=verify-full&sslrootcert=\(authority)"
        let endpoint = try PostgresEndpoint(url: base + "&sslcert=\(client.certificate)&sslkey=\(client.key)")
        #expect(endpoint.clientCertificate?.certificatePath == client.certificate)
        #expect(try await query(endpoint, "SELECT current_user::text", as: String.self) == ["tagservice"])
        let instance = Instance(endpoint) { $0.delivers = false }
        try await withRunning([instance.run]) {
            try await instance.commit((0..<10).map { makeRecord(user: "u\($0)") })
        }
        #expect(try await query(endpoint, "SELECT count(*) FROM ck_records", as: Int64.self) == [10])
        // The same key encrypted, with its passphrase.
        let encrypted = try await TestCertificates.encrypt(key: client.key, password: "s3cret")
        let locked = try PostgresEndpoint(
            url: base + "&sslcert=\(client.certificate)&sslkey=\(encrypted)&sslpassword=s3cret"
        )
        #expect(try await query(locked, "SELECT current_user::text", as: String.self) == ["tagservice"])

        let classified = try await Self.refusal(try PostgresEndpoint(url: base), role: "tagservice")
        #expect(classified.code == .unavailable)
        #expect(classified.message.contains("client certificate (sslcert, sslkey)"), "\(classified)")
    }

    /// The files `sslcert` and `sslkey` name are read with the URL: one that cannot be used is refused then, naming
    /// it, not at the first connection.
    @Test func aClientCertificateThatCannotBeUsedIsRefusedWithTheURL() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("certs-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let authority = try await TestCertificates.makeAuthority(in: directory)
        let one = try await TestCertificates.issue("one", commonName: "tagservice", in: directory)
        let other = try await TestCertificates.issue("other", commonName: "tagservice", in: directory)
        let open = directory + "/open.key"
        try FileManager.default.copyItem(atPath: one.key, toPath: open)
        #expect(chmod(open, 0o644) == 0)
        let notAKey = directory + "/certificate.key"
        try FileManager.default.copyItem(atPath: one.certificate, toPath: notAKey)
        #expect(chmod(notAKey, 0o600) == 0)
        let url = "postgres://tagservice@127.0.0.1/db?sslmode=verify-full"
        let good = try PostgresEndpoint(
            url: url + "&sslrootcert=\(authority)&sslcert=\(one.certificate)&sslkey=\(one.key)"
        )
        #expect(good.clientCertificate?.keyPath == one.key && good.rootCertificatePath == authority)
        if geteuid() == 0 {
            // A key root owns may be read by its group, as libpq allows.
            let group = directory + "/group.key"
            try FileManager.default.copyItem(atPath: one.key, toPath: group)
            #expect(chmod(group, 0o640) == 0)
            #expect(throws: Never.self) {
                try PostgresEndpoint.ClientCertificate(certificatePath: one.certificate, keyPath: group)
            }
        }
        let encrypted = try await TestCertificates.encrypt(key: one.key, password: "s3cret")
        for (query, words) in [
            ("&sslcert=\(one.certificate)&sslkey=\(encrypted)", "an encrypted one needs sslpassword"),
            (
                "&sslcert=\(one.certificate)&sslkey=\(encrypted)&sslpassword=guessed",
                "holds no pem private key that sslpassword decrypts"
            ),
            ("&sslpassword=s3cret", "sslpassword is given without sslcert and sslkey"),
            ("&sslcert=\(one.certificate)", "sslcert is given without sslkey"),
            ("&sslkey=\(one.key)", "sslkey is given without sslcert"),
            ("&sslcert=\(one.certificate)&sslkey=\(other.key)", "is not the private key of the certificate"),
            ("&sslcert=\(one.key)&sslkey=\(one.key)", "sslcert '\(one.key)' holds no pem certificate"),
            ("&sslcert=\(one.certificate)&sslkey=\(notAKey)", "holds no unencrypted pem private key"),
            ("&sslcert=\(one.certificate)&sslkey=\(open)", "by others (mode 644)"),
            ("&sslcert=\(directory)/none.crt&sslkey=\(one.key)", "sslcert '\(directory)/none.crt' is not a file"),
            ("&sslrootcert=\(one.key)", "sslrootcert '\(one.key)' holds no pem certificate"),
        ] {
            let error = #expect(throws: PostgresStoreError.self, "\(query)") { try PostgresEndpoint(url: url + query) }
            #expect(error?.code == .invalidConfiguration)
            #expect(error?.message.contains(words) == true, "\(query): \(error?.message ?? "")")
            // The key's passphrase is never shown.
            #expect(error?.message.contains("s3cret") == false && error?.message.contains("guessed") == false)
        }
        let unlocked = try PostgresEndpoint(
            url: url + "&sslcert=\(one.certificate)&sslkey=\(encrypted)&sslpassword=s3cret"
        )
        #expect(unlocked.clientCertificate?.keyPath == encrypted)
    }
}
