/* An LD_PRELOAD library that defines cuLaunchKernel to fail with a recognizable code, 12345.
 *
 * A program linked with -lcuda binds to it (preloaded definitions come first), so it fails:
 * the control. Functions the fake driver hands out through cuGetProcAddress, or that dlsym
 * finds on its handle, must stay the fake's own: the fake is linked with -Bsymbolic, so taking
 * the address of its own cuLaunchKernel cannot resolve to this one. */
typedef int CUresult;

CUresult cuLaunchKernel(void *f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
                        unsigned int by, unsigned int bz, unsigned int shared, void *stream, void **params,
                        void **extra) {
    (void)f, (void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)shared, (void)stream;
    (void)params, (void)extra;
    return 12345;
}
