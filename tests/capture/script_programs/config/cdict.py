from ml_collections import config_dict


def get_config():
    config = config_dict.ConfigDict()
    config.lr = 0.01
    config.model = config_dict.ConfigDict({"width": 16})
    return config
