import Foundation
import NIOSSL

extension PostgresEndpoint {
    /// A client certificate and its private key, for a server whose `pg_hba.conf` asks for one (`cert`
    /// authentication, or `clientcert=verify-ca|verify-full`): libpq's `sslcert` and `sslkey`.
    ///
    /// Both files are read when it is made, so a certificate that cannot be used is refused at start, not at the
    /// first connection. As libpq does, a key file its owner lets others read is refused (`chmod 0600`; a key owned
    /// by root may also be read by its group, `0640`). An encrypted key needs its passphrase (`sslpassword`).
    public struct ClientCertificate: Sendable, Hashable {
        /// The PEM file of the certificate, followed by any intermediate certificates.
        public let certificatePath: String
        /// The PEM file of the private key.
        public let keyPath: String
        let chain: [NIOSSLCertificate]
        let key: NIOSSLPrivateKey

        /// Reads the certificate chain and the key (decrypted with `keyPassword` when it is encrypted).
        /// - Throws: ``PostgresStoreError/Code/invalidConfiguration`` naming the file that cannot be read or used.
        public init(certificatePath: String, keyPath: String, keyPassword: String? = nil) throws(PostgresStoreError) {
            func refuse(_ problem: String) -> PostgresStoreError {
                PostgresStoreError(.invalidConfiguration, problem)
            }
            guard !certificatePath.isEmpty, FileManager.default.isReadableFile(atPath: certificatePath) else {
                throw refuse("sslcert '\(certificatePath)' is not a file that can be read")
            }
            guard !keyPath.isEmpty, FileManager.default.isReadableFile(atPath: keyPath) else {
                throw refuse("sslkey '\(keyPath)' is not a file that can be read")
            }
            if let problem = Self.accessProblem(keyPath) { throw refuse("sslkey '\(keyPath)' \(problem)") }
            do {
                chain = try NIOSSLCertificate.fromPEMFile(certificatePath)
            } catch {
                throw refuse("sslcert '\(certificatePath)' holds no pem certificate")
            }
            guard !chain.isEmpty else { throw refuse("sslcert '\(certificatePath)' holds no pem certificate") }
            do {
                if let keyPassword {
                    key = try NIOSSLPrivateKey(file: keyPath, format: .pem) { setPassphrase in
                        setPassphrase(Array(keyPassword.utf8))
                    }
                } else {
                    key = try NIOSSLPrivateKey(file: keyPath, format: .pem)
                }
            } catch {
                throw refuse(
                    keyPassword == nil
                        ? "sslkey '\(keyPath)' holds no unencrypted pem private key (an encrypted one needs sslpassword)"
                        : "sslkey '\(keyPath)' holds no pem private key that sslpassword decrypts"
                )
            }
            // BoringSSL checks that the key is the certificate's when a context takes both.
            var configuration = TLSConfiguration.makeClientConfiguration()
            configuration.certificateChain = chain.map { .certificate($0) }
            configuration.privateKey = .privateKey(key)
            do {
                _ = try NIOSSLContext(configuration: configuration)
            } catch {
                throw refuse("sslkey '\(keyPath)' is not the private key of the certificate in '\(certificatePath)'")
            }
            self.certificatePath = certificatePath
            self.keyPath = keyPath
        }

        /// libpq's check of a key file's permissions: no one but its owner may access it, except that root's may
        /// be read by its group.
        static func accessProblem(_ path: String) -> String? {
            var status = stat()
            guard stat(path, &status) == 0 else { return nil }
            let mode = status.st_mode & 0o777
            if status.st_uid == 0 {
                guard mode & 0o037 != 0 else { return nil }
                return "belongs to root and can be used by others (mode \(String(mode, radix: 8))): chmod 0600, or "
                    + "0640 to let its group read it"
            }
            guard mode & 0o077 != 0 else { return nil }
            return "can be read by others (mode \(String(mode, radix: 8))): allow its owner only, chmod 0600"
        }
    }
}
