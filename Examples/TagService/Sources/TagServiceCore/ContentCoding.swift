import CompressNIO
import HTTPTypes
import NIOCore

/// The `Content-Encoding` of a request body (RFC 9110 §8.4): none (or `identity`), `gzip` (also `x-gzip`) or
/// `deflate` — what Segment's and RudderStack's SDKs send when they compress a batch. `deflate` is zlib's format as
/// HTTP defines it, or, as browsers and curl read it in a response, a raw deflate stream without zlib's header (what
/// Go's `compress/flate` and .NET's `DeflateStream` write): the first two bytes tell them apart. Any other coding, or
/// more than one, is refused (415 `unsupported_content_encoding`) rather than read as if it were plain JSON.
enum ContentCoding: Sendable, Equatable {
    case identity
    case gzip
    case deflate

    /// The coding of `fields`' `Content-Encoding` (all its lines, comma-separated lists included).
    init(_ fields: HTTPFields) throws(APIError) {
        var codings: [Substring] = []
        for line in fields[values: .contentEncoding] {
            for item in line.split(separator: ",") {
                let coding = item.trimmingWhitespace()
                if !coding.isEmpty, coding.lowercased() != "identity" { codings.append(coding) }
            }
        }
        guard let coding = codings.first else {
            self = .identity
            return
        }
        guard codings.count == 1 else {
            throw APIError(
                .unsupportedContentEncoding,
                "the body is encoded more than once (Content-Encoding '\(codings.joined(separator: ", "))'): "
                    + "send it as gzip, deflate or without one"
            )
        }
        switch coding.lowercased() {
        case "gzip", "x-gzip": self = .gzip
        case "deflate": self = .deflate
        default:
            let shown = coding.count > 40 ? coding.prefix(40) + "…" : coding
            throw APIError(
                .unsupportedContentEncoding,
                "the body's Content-Encoding '\(shown)' is not supported: send it as gzip, deflate or without one"
            )
        }
    }

    /// `body` decoded; at most `limit` bytes once decoded (413 `body_too_large` past it), and a body that is not
    /// of its coding is refused (400 `malformed_encoding`).
    func decode(_ body: ByteBuffer, limit: Int) throws(APIError) -> ByteBuffer {
        let algorithm: CompressionAlgorithm
        let raw = self == .deflate && !Self.startsWithZlibHeader(body)
        switch self {
        case .identity: return body
        case .gzip: algorithm = .gzip()
        case .deflate: algorithm = raw ? .deflate() : .zlib()
        }
        let name = self == .gzip ? "gzip" : "deflate"
        // An empty stream is not one, and the decompressor would look for its output forever.
        guard body.readableBytes > 0 else {
            throw APIError(.malformedEncoding, "the body is empty, which is not \(name) data")
        }
        var input = body
        // A raw stream has no trailer: one byte past its end is left unread only if the stream ended before it.
        if raw { input.writeInteger(UInt8(0)) }
        let after = raw ? 1 : 0
        do {
            // One byte more than the limit tells a body at the limit from one past it.
            let output = try input.decompress(with: algorithm, maxSize: limit + 1)
            guard output.readableBytes <= limit else { throw CompressNIOError.bufferOverflow }
            guard input.readableBytes <= after else {
                throw APIError(.malformedEncoding, "the body has bytes after its \(name) data")
            }
            // zlib stops without a word when the input ends before the stream does: the stream's own trailer
            // (the size for gzip, the Adler-32 checksum for zlib's deflate) tells a whole stream from a cut one, and
            // a raw stream that went on into the byte after the body was cut.
            guard raw ? input.readableBytes == after : endsWithItsTrailer(body, output: output) else {
                throw APIError(.malformedEncoding, "the body's \(name) data ends early (the body was cut)")
            }
            return output
        } catch let error as APIError {
            throw error
        } catch let error as CompressNIOError where error == .bufferOverflow {
            throw APIError(.bodyTooLarge, "the body is larger than \(limit) bytes once decompressed")
        } catch {
            throw APIError(.malformedEncoding, "the body is not \(name) data (Content-Encoding: \(name)): \(error)")
        }
    }

    /// Whether `body` starts with a zlib header (RFC 1950 §2.2): the deflate method with a window of at most 32 KiB,
    /// and the two bytes a multiple of 31. A raw deflate stream never does: its first block would have to be a stored
    /// one with padding bits that no compressor writes.
    static func startsWithZlibHeader(_ body: ByteBuffer) -> Bool {
        guard let method = body.getInteger(at: body.readerIndex, as: UInt8.self),
            let flags = body.getInteger(at: body.readerIndex + 1, as: UInt8.self)
        else { return false }
        return method & 0x0F == 8 && method >> 4 <= 7 && (UInt16(method) << 8 | UInt16(flags)) % 31 == 0
    }

    /// Whether `body`'s last four bytes are the trailer of a stream that decoded to `output`: gzip's size of the
    /// decompressed data modulo 2^32 (little-endian), zlib's Adler-32 checksum of it (big-endian).
    private func endsWithItsTrailer(_ body: ByteBuffer, output: ByteBuffer) -> Bool {
        let bytes = body.readableBytesView
        guard bytes.count >= 4 else { return false }
        let last = Array(bytes.suffix(4)).map(UInt32.init)
        switch self {
        case .identity:
            return true
        case .gzip:
            let size = last[0] | last[1] << 8 | last[2] << 16 | last[3] << 24
            return size == UInt32(truncatingIfNeeded: output.readableBytes)
        case .deflate:
            let checksum = last[0] << 24 | last[1] << 16 | last[2] << 8 | last[3]
            return checksum == Self.adler32(output.readableBytesView)
        }
    }

    /// RFC 1950's Adler-32 of `bytes`.
    static func adler32(_ bytes: ByteBufferView) -> UInt32 {
        var a: UInt32 = 1
        var b: UInt32 = 0
        var pending = 0
        for byte in bytes {
            a += UInt32(byte)
            b += a
            pending += 1
            // Reduce before b can overflow (zlib's NMAX).
            if pending == 5552 {
                a %= 65521
                b %= 65521
                pending = 0
            }
        }
        return (b % 65521) << 16 | (a % 65521)
    }
}
