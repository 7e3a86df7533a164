import Synchronization

/// A typed value an extension keeps on each session (a tag provider's user, say), stored once in its own
/// type instead of being parsed again from a ``Value`` by every tag that reads it.
///
/// The value is saved in snapshots through a session attribute: ``attributeKey`` names it, and the two
/// conversions turn the typed value into that attribute and back (after a restore, or when a host sets the
/// attribute directly, the typed value is decoded from it once, on the next read).
///
/// ```swift
/// enum CartKey: SessionExtensionKey {
///     static let attributeKey = "shop.cart"
///     static func attribute(for cart: Cart) -> Value { cart.jsonValue }
///     static func stored(fromAttribute value: Value) -> Cart? { Cart(json: value) }
/// }
/// session.setExtensionValue(cart, for: CartKey.self)
/// let cart = session.extensionValue(CartKey.self)
/// ```
public protocol SessionExtensionKey {
    /// The type of the value the session keeps.
    associatedtype Stored: Sendable
    /// The session attribute that holds the value in snapshots.
    static var attributeKey: String { get }
    /// The attribute that saves `stored`.
    static func attribute(for stored: Stored) -> Value
    /// The typed value an attribute holds; `nil` when it holds none.
    static func stored(fromAttribute attribute: Value) -> Stored?
}

/// A value of ``SessionExtensionKey/Stored`` behind a reference whose class names its type: a read checks
/// the class (a comparison of two pointers) instead of casting an existential, which cost about 500
/// instructions per read on the Braze provider's path (once per tag call).
@usableFromInline
class ExtensionBox: @unchecked Sendable {
    @usableFromInline init() {}
}

/// An ``ExtensionBox`` holding a `Stored`.
///
/// `@unchecked`: its one stored property is a `let` of a `Sendable` type.
@usableFromInline
final class TypedExtensionBox<Stored: Sendable>: ExtensionBox, @unchecked Sendable {
    @usableFromInline let value: Stored

    @usableFromInline init(_ value: Stored) {
        self.value = value
        super.init()
    }
}

extension DataLayer {
    /// One typed value of ``State/extensions``, with the attribute it is saved under.
    struct ExtensionEntry: Sendable {
        var attributeKey: String
        /// `nil`: the attribute holds nothing this key can read.
        var box: ExtensionBox?
    }

    /// The value `key` keeps on this session; `nil` when none was set.
    @inlinable
    public func extensionValue<Key: SessionExtensionKey>(_ key: Key.Type) -> Key.Stored? {
        let box = extensionBox(ObjectIdentifier(key), attributeKey: Key.attributeKey) { attribute in
            Key.stored(fromAttribute: attribute).map(TypedExtensionBox.init)
        }
        // Inlined into the caller, where `Key` is known: the cast compares the box's class with one type.
        return (box as? TypedExtensionBox<Key.Stored>)?.value
    }

    /// The box of the value kept under `id`; decoded from attribute `attributeKey` on the first read since
    /// the attribute was set (a restore, a host's `setAttribute`).
    @usableFromInline
    func extensionBox(
        _ id: ObjectIdentifier,
        attributeKey: String,
        decode: (Value) -> ExtensionBox?
    ) -> ExtensionBox? {
        state.withLock { state -> ExtensionBox? in
            if let entry = state.extensions[id] { return entry.box }
            let decoded = state.attributes[attributeKey].flatMap(decode)
            state.extensions[id] = ExtensionEntry(attributeKey: attributeKey, box: decoded)
            return decoded
        }
    }

    /// Stores (or with `nil`, removes) the value `key` keeps on this session, and its attribute.
    public func setExtensionValue<Key: SessionExtensionKey>(_ value: Key.Stored?, for key: Key.Type) {
        let attribute = value.map(Key.attribute(for:))
        let box = value.map(TypedExtensionBox.init)
        state.withLock { state in
            state.extensions[ObjectIdentifier(key)] = ExtensionEntry(attributeKey: Key.attributeKey, box: box)
            state.attributes[Key.attributeKey] = attribute
            state.changes?.attributes = true
        }
    }
}

extension DataLayer.State {
    /// Forgets the typed values saved under attribute `key` (the attribute changed underneath them).
    mutating func attributeChanged(_ key: String) {
        guard !extensions.isEmpty else { return }
        for (id, entry) in extensions where entry.attributeKey.hasSameBytes(as: key) { extensions[id] = nil }
    }
}
