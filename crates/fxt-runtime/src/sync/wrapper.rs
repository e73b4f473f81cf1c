//! The lock types `Mutex` and `RwLock`: `lock_api`'s lock over this
//! module's raw lock, with the constructors that name it and the traits
//! `parking_lot`'s types have. One definition for both (issue 46).

/// Defines `$Lock<T>`, a transparent wrapper of `lock_api::$Lock<$Raw, T>`
/// (`$Raw::new(Name)` builds the raw lock; `$what` and `$whats` are how
/// the docs call one lock of the kind and several).
macro_rules! lock_type {
    ($(#[$doc:meta])* $Lock:ident, $Raw:ident, $what:literal, $whats:literal) => {
        $(#[$doc])*
        #[repr(transparent)]
        pub struct $Lock<T: ?Sized>(lock_api::$Lock<$Raw, T>);

        impl<T> $Lock<T> {
            #[doc = concat!("A ", $what, " named after the location of this call (`file:line:column`).")]
            #[track_caller]
            #[inline]
            pub const fn new(value: T) -> $Lock<T> {
                $Lock(lock_api::$Lock::from_raw(
                    $Raw::new(Name::At(Location::caller())),
                    value,
                ))
            }

            #[doc = concat!("A ", $what, " named `name` in the trace (", $whats, " of the same name are counted together).")]
            #[inline]
            pub const fn named(name: &'static str, value: T) -> $Lock<T> {
                $Lock(lock_api::$Lock::from_raw($Raw::new(Name::Named(name)), value))
            }

            #[doc = concat!("Consumes the ", $what, ", returning the value.")]
            #[inline]
            pub fn into_inner(self) -> T {
                self.0.into_inner()
            }
        }

        impl<T: ?Sized> $Lock<T> {
            /// What the lock is called in the trace.
            pub fn name(&self) -> String {
                // SAFETY: only the name is read; the raw lock is not touched.
                unsafe { self.0.raw() }.tracked.name().to_string()
            }
        }

        impl<T: ?Sized> core::ops::Deref for $Lock<T> {
            type Target = lock_api::$Lock<$Raw, T>;

            #[inline(always)]
            fn deref(&self) -> &Self::Target {
                &self.0
            }
        }

        impl<T: ?Sized> core::ops::DerefMut for $Lock<T> {
            #[inline(always)]
            fn deref_mut(&mut self) -> &mut Self::Target {
                &mut self.0
            }
        }

        impl<T: Default> Default for $Lock<T> {
            #[track_caller]
            fn default() -> $Lock<T> {
                $Lock::new(T::default())
            }
        }

        impl<T> From<T> for $Lock<T> {
            #[track_caller]
            fn from(value: T) -> $Lock<T> {
                $Lock::new(value)
            }
        }

        impl<T: ?Sized + core::fmt::Debug> core::fmt::Debug for $Lock<T> {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                self.0.fmt(f)
            }
        }
    };
}

pub(super) use lock_type;
