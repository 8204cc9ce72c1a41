package modfetch

import "archive/zip"

func openZip(name string) (*zip.ReadCloser, error) { return zip.OpenReader(name) }
