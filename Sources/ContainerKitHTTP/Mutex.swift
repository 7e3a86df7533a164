import ContainerKitSupport

/// This module's name for the package's mutex (``ContainerKitMutex``), internal: as a declaration of this module it
/// shadows the `Synchronization.Mutex` its files import, also in `make tsan` builds, where the two differ.
typealias Mutex<Value> = ContainerKitMutex<Value>
