// Marks the shared library NODELETE: a `dlclose` (for example dropping a
// `libloading::Library`) must never unmap code that a worker thread of the
// pool may still be executing. The C++ runtime is NODELETE too.
fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-z,nodelete");
}
