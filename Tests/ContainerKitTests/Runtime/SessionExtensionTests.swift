import ContainerKit
import Synchronization
import Testing

@testable import ContainerKit

/// Typed values extensions keep on a session: stored once in their own type (never also as an attribute), saved in
/// snapshots and deltas through an attribute.
struct SessionExtensionTests {
    struct Cart: Sendable, Equatable {
        var items: Int
    }

    enum CartKey: SessionExtensionKey {
        static let attributeKey = "shop.cart"
        static func attribute(for cart: Cart) -> Value { ["items": .int(Int64(cart.items))] }
        static func stored(fromAttribute attribute: Value) -> Cart? {
            guard case .object(let members) = attribute, case .int(let items)? = members["items"] else { return nil }
            return Cart(items: Int(items))
        }
    }

    /// A second key storing the same type under another attribute.
    enum WishlistKey: SessionExtensionKey {
        static let attributeKey = "shop.wishlist"
        static func attribute(for cart: Cart) -> Value { CartKey.attribute(for: cart) }
        static func stored(fromAttribute attribute: Value) -> Cart? { CartKey.stored(fromAttribute: attribute) }
    }

    /// A key storing another type under the first key's attribute.
    enum CartSizeKey: SessionExtensionKey {
        static let attributeKey = "shop.cart"
        static func attribute(for items: Int) -> Value { ["items": .int(Int64(items))] }
        static func stored(fromAttribute attribute: Value) -> Int? { CartKey.stored(fromAttribute: attribute)?.items }
    }

    @Test func twoKeysOfOneTypeKeepTheirOwnValues() {
        let session = TagManager().makeDataLayer()
        session.setExtensionValue(Cart(items: 1), for: CartKey.self)
        session.setExtensionValue(Cart(items: 7), for: WishlistKey.self)
        #expect(session.extensionValue(CartKey.self) == Cart(items: 1))
        #expect(session.extensionValue(WishlistKey.self) == Cart(items: 7))
    }

    @Test func keysOfDifferentTypesOverOneAttributeEachReadTheirOwnType() {
        let session = TagManager().makeDataLayer()
        session.setExtensionValue(Cart(items: 4), for: CartKey.self)
        // The other key has never been read: it decodes the attribute the first key saved.
        #expect(session.extensionValue(CartSizeKey.self) == 4)
        #expect(session.extensionValue(CartKey.self) == Cart(items: 4))
    }

    @Test func aTypedValueIsReadBackAsStoredAndSavedAsItsAttribute() {
        let session = TagManager().makeDataLayer()
        #expect(session.extensionValue(CartKey.self) == nil)
        session.setExtensionValue(Cart(items: 3), for: CartKey.self)
        #expect(session.extensionValue(CartKey.self) == Cart(items: 3))
        #expect(session.attribute("shop.cart") == ["items": 3])
        session.setExtensionValue(nil, for: CartKey.self)
        #expect(session.extensionValue(CartKey.self) == nil)
        #expect(session.attribute("shop.cart") == nil)
    }

    @Test func settingTheAttributeDirectlyReplacesTheTypedValue() {
        let session = TagManager().makeDataLayer()
        session.setExtensionValue(Cart(items: 3), for: CartKey.self)
        session.setAttribute(["items": 5], forKey: "shop.cart")
        #expect(session.extensionValue(CartKey.self) == Cart(items: 5))
        session.setAttribute("not a cart", forKey: "shop.cart")
        #expect(session.extensionValue(CartKey.self) == nil)
    }

    @Test func aRestoredSessionDecodesTheTypedValueFromItsSnapshot() {
        let manager = TagManager()
        let session = manager.makeDataLayer()
        session.setExtensionValue(Cart(items: 2), for: CartKey.self)
        let restored = manager.restoreDataLayer(from: session.snapshot())
        #expect(restored.extensionValue(CartKey.self) == Cart(items: 2))
    }
    /// The attributes the session holds as values (not made from a typed value).
    static func heldAttribute(_ key: String, of session: DataLayer) -> Value? {
        session.state.withLock { $0.attributes[key] }
    }

    @Test func aTypedValueIsKeptOnceAndItsAttributeIsMadeWhenTheSessionIsSaved() throws {
        let session = TagManager().makeDataLayer(
            context: nil,
            sessionID: "u-1",
            debug: false,
            committing: nil,
            keepsChanges: true
        )
        session.setExtensionValue(Cart(items: 3), for: CartKey.self)
        #expect(Self.heldAttribute("shop.cart", of: session) == nil, "not kept a second time as an attribute")
        #expect(session.attribute("shop.cart") == ["items": 3])
        #expect(session.snapshot().attributes["shop.cart"] == ["items": 3])
        let delta = try #require(session.takeDelta())
        #expect(delta.attributes?["shop.cart"] == ["items": 3])
        #expect(try SessionDelta(jsonText: delta.jsonText).attributes?["shop.cart"] == ["items": 3])
    }

    @Test func anAttributeOfASnapshotMovesIntoTheTypedValueOnItsFirstRead() throws {
        let manager = TagManager()
        // As an earlier version saved it: the value is an attribute of the snapshot's text.
        var snapshot = manager.makeDataLayer(sessionID: "u-2").snapshot()
        snapshot.attributes["other"] = "kept"
        snapshot.attributes["shop.cart"] = ["items": 6]
        let restored = manager.restoreDataLayer(from: try SessionSnapshot(jsonText: snapshot.jsonText))
        #expect(Self.heldAttribute("shop.cart", of: restored) == ["items": 6])
        #expect(restored.extensionValue(CartKey.self) == Cart(items: 6))
        #expect(Self.heldAttribute("shop.cart", of: restored) == nil, "moved into the typed value")
        #expect(Self.heldAttribute("other", of: restored) == "kept")
        #expect(restored.snapshot().jsonText == snapshot.jsonText, "saved as it was read")
    }

    @Test func anAttributeNoKeyCanReadStaysAnAttribute() {
        let session = TagManager().makeDataLayer()
        session.setAttribute("not a cart", forKey: "shop.cart")
        #expect(session.extensionValue(CartKey.self) == nil)
        #expect(Self.heldAttribute("shop.cart", of: session) == "not a cart")
        #expect(session.snapshot().attributes["shop.cart"] == "not a cart")
    }

    @Test func settingOneKeyReplacesTheValueOfAnotherKeyOverTheSameAttribute() {
        let session = TagManager().makeDataLayer()
        session.setExtensionValue(Cart(items: 4), for: CartKey.self)
        #expect(session.extensionValue(CartSizeKey.self) == 4)
        session.setExtensionValue(Cart(items: 9), for: CartKey.self)
        #expect(session.extensionValue(CartSizeKey.self) == 9, "not the value read before")
        session.setExtensionValue(2, for: CartSizeKey.self)
        #expect(session.extensionValue(CartKey.self) == Cart(items: 2))
        #expect(session.snapshot().attributes["shop.cart"] == ["items": 2])
    }
}
