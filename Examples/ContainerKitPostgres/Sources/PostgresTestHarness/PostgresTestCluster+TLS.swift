import Foundation

extension PostgresTestCluster {
    /// Turns TLS on: makes a throw-away certificate authority and a server certificate for `127.0.0.1` and
    /// `localhost` signed by it (with `openssl`, in the cluster's directory), sets `ssl`, `ssl_cert_file` and
    /// `ssl_key_file`, and restarts the server. Connections in the clear are still accepted (trust on loopback).
    /// - Returns: the authority's certificate (PEM), for a client's `sslrootcert`.
    public func enableTLS() async throws -> String {
        let tls = "\(directory)/tls"
        try FileManager.default.createDirectory(atPath: tls, withIntermediateDirectories: true)
        let openssl = "/usr/bin/openssl"
        try await Self.run(
            openssl,
            [
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=ContainerKit test CA",
                "-keyout", "\(tls)/ca.key", "-out", "\(tls)/ca.crt",
            ]
        )
        try await Self.run(
            openssl,
            [
                "req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost", "-keyout", "\(tls)/server.key",
                "-out", "\(tls)/server.csr",
            ]
        )
        try "subjectAltName = IP:127.0.0.1, DNS:localhost\n".write(
            toFile: "\(tls)/server.ext",
            atomically: false,
            encoding: .utf8
        )
        try await Self.run(
            openssl,
            [
                "x509", "-req", "-in", "\(tls)/server.csr", "-CA", "\(tls)/ca.crt", "-CAkey", "\(tls)/ca.key",
                "-CAcreateserial", "-days", "2", "-extfile", "\(tls)/server.ext", "-out", "\(tls)/server.crt",
            ]
        )
        // The server reads its key only when its owner alone may.
        guard chmod("\(tls)/server.key", 0o600) == 0 else {
            throw Failure(description: "chmod of the server key failed: errno \(errno)")
        }
        if let runAs { try await Self.run("/bin/chown", ["-R", runAs, tls]) }
        for setting in ["ssl_cert_file = '\(tls)/server.crt'", "ssl_key_file = '\(tls)/server.key'", "ssl = on"] {
            try await psql("ALTER SYSTEM SET \(setting)")
        }
        try await stopServer()
        try await startServer()
        return "\(tls)/ca.crt"
    }
}
