//! Loops over a page's values compiled twice: for any x86-64, and for
//! processors with AVX2 and BMI2, chosen when called. A build for any
//! x86-64 compares 64-bit integers with several instructions each and
//! shifts by a variable count in three, where those take one. Either
//! build writes the same bytes (each encoder's tests compare them).

/// Whether the processor has AVX2 and BMI2.
#[cfg(target_arch = "x86_64")]
#[inline]
pub(crate) fn has_avx2() -> bool {
    std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("bmi2")
}

/// Defines `fn NAME(ARGS) -> RET` as `ANY(ARGS)`, called through a copy
/// compiled for AVX2 and BMI2 where the processor has them. `ANY` is
/// `#[inline(always)]`, so each copy is its own loop.
macro_rules! compiled_twice {
    (
        $(#[$attr:meta])*
        $vis:vis fn $name:ident $(<$g:ident: $bound:path>)?
            ($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)? => $any:ident
    ) => {
        $(#[$attr])*
        $vis fn $name $(<$g: $bound>)? ($($arg: $ty),*) $(-> $ret)? {
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx2,bmi2")]
                fn avx2 $(<$g: $bound>)? ($($arg: $ty),*) $(-> $ret)? {
                    $any($($arg),*)
                }
                if $crate::twice::has_avx2() {
                    // SAFETY: the processor has AVX2 and BMI2 (just
                    // checked), all `avx2` was compiled for.
                    return unsafe { avx2($($arg),*) };
                }
            }
            $any($($arg),*)
        }
    };
}
