import ContainerKit

/// This module's name for the package's mutex: its own declaration, so it shadows the `Synchronization.Mutex` that
/// files import for `withLock` (see ``ContainerKitMutex``).
typealias Mutex<Value> = ContainerKitMutex<Value>
