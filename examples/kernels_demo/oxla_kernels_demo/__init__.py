"""oxla-kernels-demo: an example kernel package (see the README's "Writing a kernel
package"). Its kernel and override live in :mod:`oxla_kernels_demo.kernels`."""
