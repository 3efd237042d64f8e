//! Words to picasso-syntax text.
