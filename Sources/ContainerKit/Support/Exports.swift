// The package's mutex and owned threads (`Mutex`, `OwnedThread`, `untilCancelled`) for every module that imports
// ContainerKit: they are `package` declarations, so nothing of them is visible outside the package.
@_exported import ContainerKitSupport
