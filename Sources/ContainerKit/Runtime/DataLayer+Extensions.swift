import Synchronization

/// A typed value an extension keeps on each session (a tag provider's user, say), stored once in its own
/// type instead of being parsed again from a ``Value`` by every tag that reads it.
///
/// The session holds the typed value only. Snapshots and deltas save it as a session attribute:
/// ``attributeKey`` names it, and the two conversions turn the typed value into that attribute when the session
/// is saved (or its ``DataLayer/attribute(_:)`` is read) and the attribute back into the typed value on the
/// first read after a restore or a host's ``DataLayer/setAttribute(_:forKey:)`` — which moves it out of the
/// attributes, so that it is never kept twice.
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
public protocol SessionExtensionKey: SendableMetatype {
    /// The type of the value the session keeps.
    associatedtype Stored: Sendable
    /// The session attribute that holds the value in snapshots.
    static var attributeKey: String { get }
    /// The attribute that saves `stored`.
    static func attribute(for stored: Stored) -> Value
    /// The typed value an attribute holds; `nil` when it holds none.
    static func stored(fromAttribute attribute: Value) -> Stored?
}

/// A typed value of a ``SessionExtensionKey`` behind a reference whose class names its key: a read checks
/// the class (a comparison of two pointers) instead of casting an existential, which cost about 500
/// instructions per read on the Braze provider's path (once per tag call).
@usableFromInline
class ExtensionBox: @unchecked Sendable {
    @usableFromInline init() {}

    /// The attribute that saves the value (see ``SessionExtensionKey/attribute(for:)``).
    func attribute() -> Value { .null }
}

/// An ``ExtensionBox`` holding a value of `Key`.
///
/// `@unchecked`: its one stored property is a `let` of a `Sendable` type.
@usableFromInline
final class TypedExtensionBox<Key: SessionExtensionKey>: ExtensionBox, @unchecked Sendable {
    @usableFromInline let value: Key.Stored

    @usableFromInline init(_ value: Key.Stored) {
        self.value = value
        super.init()
    }

    override func attribute() -> Value { Key.attribute(for: value) }
}

extension DataLayer {
    /// One typed value of ``State/extensions``, with the attribute it is saved under.
    struct ExtensionEntry: Sendable {
        var attributeKey: String
        /// `nil`: no value (removed, or the attribute holds nothing this key can read).
        var box: ExtensionBox?
    }

    /// The value `key` keeps on this session; `nil` when none was set.
    @inlinable
    public func extensionValue<Key: SessionExtensionKey>(_ key: Key.Type) -> Key.Stored? {
        let box = extensionBox(ObjectIdentifier(key), attributeKey: Key.attributeKey) { attribute in
            Key.stored(fromAttribute: attribute).map(TypedExtensionBox<Key>.init)
        }
        // Inlined into the caller, where `Key` is known: the cast compares the box's class with one type.
        return (box as? TypedExtensionBox<Key>)?.value
    }

    /// The box of the value kept under `id`; on the first read since attribute `attributeKey` was set (a restore,
    /// a host's `setAttribute`) decoded from it, and the attribute then moved into the box.
    @usableFromInline
    func extensionBox(
        _ id: ObjectIdentifier,
        attributeKey: String,
        decode: (Value) -> ExtensionBox?
    ) -> ExtensionBox? {
        state.withLock { state -> ExtensionBox? in
            if let entry = state.extensions[id] { return entry.box }
            let decoded: ExtensionBox?
            if let attribute = state.attributes[attributeKey] {
                decoded = decode(attribute)
                // Kept once: in the box from now on (an attribute this key cannot read stays as it is).
                if decoded != nil { state.attributes[attributeKey] = nil }
            } else {
                // Another key's value saved under the same attribute (two types over one attribute).
                decoded = state.typedAttribute(attributeKey).flatMap(decode)
            }
            state.extensions[id] = ExtensionEntry(attributeKey: attributeKey, box: decoded)
            return decoded
        }
    }

    /// Stores (or with `nil`, removes) the value `key` keeps on this session (saved as its attribute).
    public func setExtensionValue<Key: SessionExtensionKey>(_ value: Key.Stored?, for key: Key.Type) {
        let box = value.map(TypedExtensionBox<Key>.init)
        state.withLock { state in
            // Other keys' values over the same attribute, and the attribute itself, are replaced by this one.
            state.attributeChanged(Key.attributeKey)
            state.attributes[Key.attributeKey] = nil
            state.extensions[ObjectIdentifier(key)] = ExtensionEntry(attributeKey: Key.attributeKey, box: box)
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

    /// Attribute `key` as a typed value saves it, if one holds it.
    func typedAttribute(_ key: String) -> Value? {
        guard !extensions.isEmpty else { return nil }
        for entry in extensions.values where entry.attributeKey.hasSameBytes(as: key) {
            if let box = entry.box { return box.attribute() }
        }
        return nil
    }

    /// The session's attributes as a snapshot saves them: the plain ones and those of the typed values.
    var savedAttributes: ValueMap {
        guard !extensions.isEmpty else { return attributes }
        var all = attributes
        for entry in extensions.values {
            guard let box = entry.box, all[entry.attributeKey] == nil else { continue }
            all[entry.attributeKey] = box.attribute()
        }
        return all
    }
}
