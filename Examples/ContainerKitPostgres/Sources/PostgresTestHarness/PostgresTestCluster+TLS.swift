import Foundation

/// Throw-away certificates made with `openssl`: an authority, and certificates it signs.
public enum TestCertificates {
    private static let openssl = "/usr/bin/openssl"

    /// Makes a self-signed certificate authority in `directory` (`ca.crt`, `ca.key`), valid for two days.
    /// - Returns: the authority's certificate (PEM).
    @discardableResult
    public static func makeAuthority(in directory: String) async throws -> String {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try await PostgresTestCluster.run(
            openssl,
            [
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=ContainerKit test CA",
                "-keyout", "\(directory)/ca.key", "-out", "\(directory)/ca.crt",
            ]
        )
        return "\(directory)/ca.crt"
    }

    /// Makes `<name>.crt` and `<name>.key` (mode 0600) in `directory`, signed by the authority
    /// ``makeAuthority(in:)`` made there, for `commonName` and the subject alternative names `altNames`
    /// (`IP:127.0.0.1`, `DNS:localhost`).
    public static func issue(
        _ name: String,
        commonName: String,
        altNames: [String] = [],
        in directory: String
    ) async throws -> (certificate: String, key: String) {
        let certificate = "\(directory)/\(name).crt"
        let key = "\(directory)/\(name).key"
        try await PostgresTestCluster.run(
            openssl,
            [
                "req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=\(commonName)", "-keyout", key, "-out",
                "\(directory)/\(name).csr",
            ]
        )
        var arguments = [
            "x509", "-req", "-in", "\(directory)/\(name).csr", "-CA", "\(directory)/ca.crt", "-CAkey",
            "\(directory)/ca.key", "-CAcreateserial", "-days", "2", "-out", certificate,
        ]
        if !altNames.isEmpty {
            let extensions = "\(directory)/\(name).ext"
            try "subjectAltName = \(altNames.joined(separator: ", "))\n".write(
                toFile: extensions,
                atomically: false,
                encoding: .utf8
            )
            arguments += ["-extfile", extensions]
        }
        try await PostgresTestCluster.run(openssl, arguments)
        // A server reads its key, and libpq a client's, only when its owner alone may.
        guard chmod(key, 0o600) == 0 else {
            throw PostgresTestCluster.Failure(description: "chmod of \(key) failed: errno \(errno)")
        }
        return (certificate, key)
    }
}

extension TestCertificates {
    /// Writes `key` encrypted with `password` (AES-256, PKCS#8) beside it as `<key>.encrypted` (mode 0600).
    /// - Returns: the encrypted key's path.
    public static func encrypt(key: String, password: String) async throws -> String {
        let encrypted = key + ".encrypted"
        try await PostgresTestCluster.run(
            "/usr/bin/openssl",
            ["pkcs8", "-topk8", "-v2", "aes-256-cbc", "-in", key, "-out", encrypted, "-passout", "pass:\(password)"]
        )
        guard chmod(encrypted, 0o600) == 0 else {
            throw PostgresTestCluster.Failure(description: "chmod of \(encrypted) failed: errno \(errno)")
        }
        return encrypted
    }
}

extension PostgresTestCluster {
    /// Turns TLS on: makes a throw-away certificate authority and a server certificate for `127.0.0.1` and
    /// `localhost` signed by it (with `openssl`, in the cluster's directory), sets `ssl`, `ssl_cert_file` and
    /// `ssl_key_file`, and restarts the server. Connections in the clear are still accepted (trust on loopback).
    /// - Returns: the authority's certificate (PEM), for a client's `sslrootcert`.
    public func enableTLS() async throws -> String {
        let tls = "\(directory)/tls"
        let authority = try await TestCertificates.makeAuthority(in: tls)
        let server = try await TestCertificates.issue(
            "server",
            commonName: "localhost",
            altNames: ["IP:127.0.0.1", "DNS:localhost"],
            in: tls
        )
        if let runAs { try await Self.run("/bin/chown", ["-R", runAs, tls]) }
        for setting in ["ssl_cert_file = '\(server.certificate)'", "ssl_key_file = '\(server.key)'", "ssl = on"] {
            try await psql("ALTER SYSTEM SET \(setting)")
        }
        try await stopServer()
        try await startServer()
        return authority
    }

    /// Makes `role` (a new superuser) log in over TLS with a client certificate and nothing else, as
    /// `pg_hba.conf`'s `cert` method asks: a certificate signed by the authority ``enableTLS()`` made, whose common
    /// name is the role. Sets `ssl_ca_file` (the authority the server checks client certificates against) and
    /// restarts the server. Other roles log in as before.
    /// - Returns: the PEM files of a certificate for `role` and its key (mode 0600), for a client's `sslcert` and
    ///   `sslkey`.
    public func requireClientCertificate(role: String) async throws -> (certificate: String, key: String) {
        let tls = "\(directory)/tls"
        let client = try await TestCertificates.issue(role, commonName: role, in: tls)
        try await psql("CREATE ROLE \(role) LOGIN SUPERUSER")
        try await psql("ALTER SYSTEM SET ssl_ca_file = '\(tls)/ca.crt'")
        // The first line that matches decides: the role over TLS with a certificate, and never otherwise.
        let hba = "\(directory)/data/pg_hba.conf"
        let rules = "hostssl all \(role) 127.0.0.1/32 cert\nhost all \(role) 127.0.0.1/32 reject\n"
        try (rules + (try String(contentsOfFile: hba, encoding: .utf8))).write(
            toFile: hba,
            atomically: false,
            encoding: .utf8
        )
        try await stopServer()
        try await startServer()
        return client
    }
}
