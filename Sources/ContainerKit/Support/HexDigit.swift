/// Hexadecimal digits in ASCII text (a `%XX` escape, a `\uXXXX` escape).
package enum HexDigit {
    /// The value of the hex digit `byte` (`0`–`9`, `a`–`f`, `A`–`F`); `nil` for any other byte.
    package static func value(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 0x30...0x39: return byte - 0x30
        case 0x41...0x46: return byte - 0x41 + 10
        case 0x61...0x66: return byte - 0x61 + 10
        default: return nil
        }
    }
}
