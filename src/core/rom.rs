//! The default microcode ROM, assembled from shaders/rom.shdr.
