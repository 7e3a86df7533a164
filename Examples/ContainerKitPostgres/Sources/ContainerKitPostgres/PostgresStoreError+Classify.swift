import ContainerKit
import PostgresNIO

/// A call that ran past its client-side deadline (``PostgresRecordStore/Configuration/callTimeout``).
struct CallTimedOut: Error {}

extension PostgresStoreError {
    /// What `error` — thrown by postgres-nio, the pool or the store's deadline — means for `operation` ("the
    /// commit", "the session load"), in a message that holds no URL, password, SQL text or server detail.
    /// - Parameters:
    ///   - role: the role the store logs in as (named in what to grant).
    ///   - timeout: the deadline in force (named in a timeout's message).
    static func classify(_ error: any Error, operation: String, role: String, timeout: Duration)
        -> PostgresStoreError
    {
        if let error = error as? PostgresStoreError { return error }
        if error is CallTimedOut {
            return PostgresStoreError(
                .timeout,
                "\(operation) did not finish within \(timeout.secondsText) (a table locked, or postgresql too busy)"
            )
        }
        if let error = error as? PostgresTransactionError {
            let inner = error.closureError ?? error.commitError ?? error.beginError ?? error.rollbackError
            if let inner { return classify(inner, operation: operation, role: role, timeout: timeout) }
        }
        guard let error = error as? PSQLError else {
            if error is PostgresDecodingError {
                return PostgresStoreError(.refused, "\(operation) got an answer it cannot read")
            }
            return PostgresStoreError(.unavailable, "\(operation) failed: postgresql cannot be reached")
        }
        if error.code == .sslUnsupported {
            return PostgresStoreError(
                .unavailable,
                "postgresql does not offer TLS, which the url's sslmode asks for (turn ssl on in the server, or use "
                    + "sslmode=prefer or disable on a private network)"
            )
        }
        if error.underlying is NIOSSLError {
            return PostgresStoreError(
                .unavailable,
                "the TLS handshake with postgresql failed: its certificate does not chain to the trusted roots "
                    + "(sslrootcert), or does not name the host (sslmode=verify-full)"
            )
        }
        guard error.code == .server, let state = error.serverInfo?[.sqlState] else {
            return PostgresStoreError(.unavailable, "\(operation) failed: the connection to postgresql was lost")
        }
        switch state {
        case "57014", "55P03":
            // statement_timeout, lock_timeout: the server's side of the same deadline.
            return PostgresStoreError(
                .timeout,
                "\(operation) did not finish within \(timeout.secondsText) (a table locked, or postgresql too busy)"
            )
        case "42501":
            return permissionDenied(error.serverInfo?[.message] ?? "", operation: operation, role: role)
        case "28000" where (error.serverInfo?[.message] ?? "").contains("certificate"):
            // pg_hba.conf's cert method, or clientcert=verify-…: no certificate, or one that does not name the role.
            return PostgresStoreError(
                .unavailable,
                "postgresql refused the login of role '\(role)': it asks for a client certificate (sslcert, sslkey) "
                    + "signed by the authority in its ssl_ca_file, whose common name is the role"
            )
        case "28000", "28P01":
            return PostgresStoreError(
                .unavailable,
                "postgresql refused the login of role '\(role)' (check the password and pg_hba.conf)"
            )
        case "3D000":
            return PostgresStoreError(.unavailable, "the database the url names does not exist")
        case _ where state.hasPrefix("08") || state.hasPrefix("53") || state.hasPrefix("57P"):
            return PostgresStoreError(.unavailable, "\(operation) failed: postgresql cannot take it now")
        default:
            return PostgresStoreError(.refused, "postgresql refused \(operation) (sqlstate \(state))")
        }
    }

    /// A refused privilege, as what to grant: the object comes from the server's message (`permission denied
    /// for schema public`, `must be owner of table ck_cursors`), kept only when it is a plain name.
    static func permissionDenied(_ serverMessage: String, operation: String, role: String) -> PostgresStoreError {
        let words = serverMessage.split(separator: " ").map(String.init)
        let kinds = ["schema", "table", "sequence", "function", "relation", "database"]
        var kind: String?
        var name: String?
        if words.count >= 2, kinds.contains(words[words.count - 2]) {
            let candidate = words[words.count - 1]
            let plain = candidate.utf8.allSatisfy { byte in
                (byte >= 97 && byte <= 122) || (byte >= 48 && byte <= 57) || byte == 95 || byte == 46
            }
            if plain && !candidate.isEmpty && candidate.utf8.count <= 63 {
                kind = words[words.count - 2] == "relation" ? "table" : words[words.count - 2]
                name = candidate
            }
        }
        let owner = serverMessage.hasPrefix("must be owner")
        guard let kind, let name else {
            return PostgresStoreError(
                .permissionDenied,
                "the role '\(role)' lacks a privilege \(operation) needs: grant it CREATE and USAGE on the schema "
                    + "of the ck_ tables and SELECT, INSERT, UPDATE, DELETE on them (Docs/Scaling.md)"
            )
        }
        if owner {
            return PostgresStoreError(
                .permissionDenied,
                "the role '\(role)' does not own \(kind) '\(name)', which the store creates and alters: run it as "
                    + "the owner, or ALTER \(kind.uppercased()) \(name) OWNER TO \(role)"
            )
        }
        let grant: String
        switch kind {
        case "schema": grant = "GRANT USAGE, CREATE ON SCHEMA \(name) TO \(role)"
        case "sequence": grant = "GRANT USAGE, SELECT, UPDATE ON SEQUENCE \(name) TO \(role)"
        case "function": grant = "GRANT EXECUTE ON FUNCTION \(name) TO \(role)"
        case "database": grant = "GRANT CONNECT, CREATE ON DATABASE \(name) TO \(role)"
        default: grant = "GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE \(name) TO \(role)"
        }
        return PostgresStoreError(
            .permissionDenied,
            "the role '\(role)' lacks a privilege on \(kind) '\(name)' that \(operation) needs: \(grant)"
        )
    }

    /// The server's side of `error` for the log — its message and SQLSTATE, or postgres-nio's error code —
    /// never the query nor its values.
    static func serverSummary(_ error: any Error) -> String {
        if let error = error as? PSQLError {
            if let message = error.serverInfo?[.message] {
                return "'\(message)' (sqlstate \(error.serverInfo?[.sqlState] ?? "?"))"
            }
            return "\(error.code)"
        }
        if let error = error as? PostgresTransactionError {
            let inner = error.closureError ?? error.commitError ?? error.beginError ?? error.rollbackError
            return inner.map(serverSummary) ?? "transaction error"
        }
        if error is CallTimedOut { return "client deadline passed" }
        if let error = error as? PostgresStoreError { return error.description }
        // A connection error (NIO's): what failed and the errno, no query.
        return String(describing: error)
    }

    /// Whether the server said that a table or function of the schema is missing (dropped behind the store's
    /// back): the store creates its schema again at the next call.
    static func isMissingSchema(_ error: any Error) -> Bool {
        guard let error = error as? PSQLError, let state = error.serverInfo?[.sqlState] else { return false }
        return state == "42P01" || state == "42883"
    }
}

extension Duration {
    /// `5 s`, `1.5 s`, `250 ms`.
    var secondsText: String {
        let milliseconds = Int((seconds * 1000).rounded())
        if milliseconds < 1000 { return "\(milliseconds) ms" }
        if milliseconds % 1000 == 0 { return "\(milliseconds / 1000) s" }
        return "\(Double(milliseconds) / 1000) s"
    }
}
