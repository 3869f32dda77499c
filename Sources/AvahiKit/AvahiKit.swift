import CAvahi
