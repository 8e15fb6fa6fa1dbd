/* Preloaded into the sanitized test run (scripts/sanitizers/run.sh): dlclose does nothing, so the modules
 * Open MPI loads with dlopen (its mca_* plugins) stay mapped until the process exits. LeakSanitizer
 * reports at exit; with the modules still mapped it can name them, and lsan.supp can match Open MPI's
 * allocations from the fast frame-pointer unwinder's short stacks. Without this the run needed
 * the slow unwinder on every malloc, which made the MPI tests several times slower. */
int dlclose(void *handle);

int dlclose(void *handle) {
  (void)handle;
  return 0;
}
