//! Reasons as types: errors whose whole content is a sentence for a person (a value that cannot
//! be used, a figure that cannot be had), each its own type so a signature says which kind of
//! reason it gives, and `?` turns the words into it.

/// Declares a reason type: a newtype of its words, shown as they are, an error, made from a
/// `String` or a `&str`.
#[macro_export]
macro_rules! reason {
    ($(#[$meta:meta])* $name:ident) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub struct $name(pub String);

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl std::error::Error for $name {}

        impl From<String> for $name {
            fn from(why: String) -> $name {
                $name(why)
            }
        }

        impl From<&str> for $name {
            fn from(why: &str) -> $name {
                $name(why.to_string())
            }
        }
    };
}

reason! {
    /// A value a person gave (a flag's, a variable's, a line of a file) that cannot be used, and
    /// why, in words that name it (`--memory "DDR9": ...`): what clap prints after the flag, or a
    /// usage error.
    BadValue
}

reason! {
    /// Something this machine, kernel or privilege cannot give here (a counter, a tracer, a
    /// table), and why: said at run time in place of a figure.
    Unavailable
}
